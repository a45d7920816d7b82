import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { Agent, request as httpRequest } from 'node:http'
import { connect, type Socket } from 'node:net'
import { fileURLToPath } from 'node:url'
import { until } from './roles.js'

/**
 * Clients of the hostile-client faults. Every loopback address reaches a
 * server listening on 127.0.0.1, so an attacker is simply another source
 * address (127.0.0.2, …): one IP to the server, with no proxy and no header
 * to believe. The /healthz probe asks from 127.0.0.1.
 */

export type Answer = { status: number; body: string; headers: Record<string, string | string[] | undefined> }

/** Requests from one source address over kept-alive connections, as a script hammering an API would send them. */
export function clientAt(baseUrl: string, localAddress: string, maxSockets = 8) {
  const url = new URL(baseUrl)
  const agent = new Agent({ keepAlive: true, maxSockets })
  function send(method: string, path: string, body?: unknown): Promise<Answer> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
    return new Promise((resolve, reject) => {
      const outgoing = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          method,
          path,
          localAddress,
          agent,
          headers: payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {},
          timeout: 30_000,
        },
        (response) => {
          let text = ''
          response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')))
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text, headers: response.headers }))
          response.on('error', reject)
        },
      )
      outgoing.on('timeout', () => outgoing.destroy(new Error(`${method} ${path}: no answer within 30 s`)))
      outgoing.on('error', reject)
      outgoing.end(payload)
    })
  }
  return { send, close: () => agent.destroy() }
}

/** A raw connection from `localAddress` that writes `text` and records what comes back until the server closes it. */
export function rawConnection(baseUrl: string, localAddress: string, text: string) {
  const socket: Socket = connect({ host: '127.0.0.1', port: Number(new URL(baseUrl).port), localAddress })
  let received = ''
  let closedAt: number | undefined
  const openedAt = Date.now()
  socket.on('connect', () => socket.write(text))
  socket.on('data', (chunk) => (received += chunk.toString('latin1')))
  socket.on('error', () => {})
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closedAt = Date.now()
      resolve()
    }),
  )
  return {
    socket,
    closed,
    /** The status of the first answer, once one arrived. */
    status: () => Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0),
    received: () => received,
    /** How long the server held the connection open, once it closed it. */
    heldMs: () => (closedAt === undefined ? undefined : closedAt - openedAt),
  }
}

export type ProbeResult = { requests: number; errors: number; p50Ms: number; p99Ms: number; maxMs: number }

/** /healthz latencies seen by another process (healthz-probe.mjs, from 127.0.0.1) while `during` runs. */
export async function probeHealthz<T>(baseUrl: string, during: () => Promise<T>): Promise<{ probe: ProbeResult; result: T }> {
  const probe = spawn(process.execPath, [fileURLToPath(new URL('./healthz-probe.mjs', import.meta.url)), baseUrl, '10', 'ready'], { stdio: ['pipe', 'pipe', 'inherit'] })
  let output = ''
  probe.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  let result: T
  try {
    // from the probe's first answer on, so it measures the whole of `during`
    await until('the /healthz probe answering', () => output.startsWith('ready\n') || probe.exitCode !== null, 30_000)
    result = await during()
  } finally {
    probe.stdin.end()
    await once(probe, 'exit')
  }
  return { probe: JSON.parse(output.replace(/^ready\n/, '')) as ProbeResult, result }
}

/** Counts of each value. */
export function tally(values: ReadonlyArray<string | number>): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1
  return counts
}
