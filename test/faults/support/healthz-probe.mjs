// A client of its own (another process): asks GET /healthz every few milliseconds, one request at a
// time over a kept-alive connection, until its stdin closes; then prints the latencies as JSON.
// Used by the hostile-input fault to measure what other clients see while hostile requests run.
// With a third argument `ready`, it first prints `ready` on a line of its own once /healthz answered.
import { Agent, get } from 'node:http'

const [url, intervalArg = '10', announce] = process.argv.slice(2)
const interval = Number(intervalArg)
const agent = new Agent({ keepAlive: true, maxSockets: 1 })
const latencies = []
let errors = 0
let running = true
process.stdin.on('end', () => (running = false))
process.stdin.resume()

function once() {
  return new Promise((resolve) => {
    const started = process.hrtime.bigint()
    const request = get(`${url}/healthz`, { agent, timeout: 30_000 }, (response) => {
      response.resume()
      response.on('end', () => {
        if (response.statusCode === 200) latencies.push(Number(process.hrtime.bigint() - started) / 1e6)
        else errors++
        resolve()
      })
    })
    request.on('timeout', () => request.destroy(new Error('timeout')))
    request.on('error', () => {
      errors++
      resolve()
    })
  })
}

while (running) {
  await once()
  if (announce === 'ready' && latencies.length === 1) process.stdout.write('ready\n')
  await new Promise((resolve) => setTimeout(resolve, interval))
}
latencies.sort((a, b) => a - b)
const at = (q) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] : null)
process.stdout.write(JSON.stringify({ requests: latencies.length, errors, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: latencies.at(-1) ?? null }))
agent.destroy()
