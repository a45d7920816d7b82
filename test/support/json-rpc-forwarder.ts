import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/**
 * A small JSON-RPC front for a node, for the endpoint tests: it forwards every
 * request, answers chosen methods itself (`answer`), rewrites results
 * (`rewrite`), counts calls per method, and can be killed (port closed, open
 * connections cut) and brought back on the same port, as a provider outage.
 */
type Call = { jsonrpc: '2.0'; id: unknown; method: string; params?: unknown[] }
type Answer = { jsonrpc: '2.0'; id: unknown; result?: unknown; error?: { code: number; message: string } }

export type ForwarderOptions = {
  target: string
  /** An answer of its own for a call, or undefined to forward it. */
  answer?: (call: Call) => Omit<Answer, 'jsonrpc' | 'id'> | undefined
  /** The node's result of a call, rewritten. */
  rewrite?: (call: Call, result: unknown) => unknown
}

export type Forwarder = {
  url: string
  methodCalls: Record<string, number>
  /** Forwards to another node from now on (a node restarted on another port). */
  setTarget(target: string): void
  setAnswer(answer: ForwarderOptions['answer']): void
  setRewrite(rewrite: ForwarderOptions['rewrite']): void
  kill(): Promise<void>
  revive(): Promise<void>
  close(): Promise<void>
}

export async function startForwarder(options: ForwarderOptions): Promise<Forwarder> {
  let { answer, rewrite, target } = options
  const methodCalls: Record<string, number> = {}
  const sockets = new Set<Socket>()

  async function forward(calls: Call[]): Promise<Answer[]> {
    const own = calls.map((call) => answer?.(call))
    const asked = calls.filter((_, i) => !own[i])
    let answers: Answer[] = []
    if (asked.length) {
      const response = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(asked) })
      answers = (await response.json()) as Answer[]
    }
    const byId = new Map(answers.map((item) => [JSON.stringify(item.id), item]))
    return calls.map((call, i) => {
      const mine = own[i]
      if (mine) return { jsonrpc: '2.0', id: call.id, ...mine }
      const item = byId.get(JSON.stringify(call.id))!
      return rewrite && item.result !== undefined ? { ...item, result: rewrite(call, item.result) } : item
    })
  }

  function createFront(): Server {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Call | Call[]
        const calls = Array.isArray(body) ? body : [body]
        for (const call of calls) methodCalls[call.method] = (methodCalls[call.method] ?? 0) + 1
        forward(calls).then(
          (answers) => {
            response.writeHead(200, { 'content-type': 'application/json' })
            response.end(JSON.stringify(Array.isArray(body) ? answers : answers[0]))
          },
          () => response.destroy(),
        )
      })
    })
    server.on('connection', (socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
    })
    return server
  }

  let server = createFront()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  let alive = true

  async function kill() {
    if (!alive) return
    alive = false
    const closed = new Promise<void>((resolve) => server.close(() => resolve()))
    for (const socket of sockets) socket.destroy()
    await closed
  }

  return {
    url: `http://127.0.0.1:${port}`,
    methodCalls,
    setTarget: (next) => void (target = next),
    setAnswer: (next) => void (answer = next),
    setRewrite: (next) => void (rewrite = next),
    kill,
    async revive() {
      if (alive) return
      server = createFront()
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
      alive = true
    },
    close: kill,
  }
}
