import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { Random } from '../../../devnet/suffixes.js'

/**
 * A JSON-RPC proxy in front of anvil that behaves like a bad provider:
 *
 * - HTTP faults: 429 with Retry-After, 500/502/503, requests that hang past
 *   the client's timeout, bodies cut mid-JSON, connections reset, and
 *   JSON-RPC errors inside an HTTP 200 (per item of a batch);
 * - batch answers in another order than asked (ids intact, as JSON-RPC allows);
 * - a load-balanced pool where some requests reach a node that is behind:
 *   its `latest` is older, newer blocks and their receipts are null.
 */
export type HttpFault = '429' | '500' | '502' | '503' | 'timeout' | 'truncated' | 'reset' | 'rpc-error'
export const httpFaults: readonly HttpFault[] = ['429', '500', '502', '503', 'timeout', 'truncated', 'reset', 'rpc-error']

export type ChaosSettings = {
  /** Share of HTTP requests answered with one of `faults`. */
  faultRate: number
  faults: readonly HttpFault[]
  /** Share of HTTP requests served by the lagging node. */
  laggingShare: number
  /** How many blocks the lagging node is behind (drawn per request from 1..maxLag). */
  maxLag: number
  /** Answer batches in a shuffled order. */
  shuffleBatches: boolean
  /**
   * Share of batches in which two answers of the same method trade results
   * while keeping their ids: a broken node or proxy answering block N with
   * block M, or one transaction's receipt with another's.
   */
  swapResults: number
}

export type ChaosCounts = Record<HttpFault | 'ok' | 'lagging' | 'shuffled' | 'swapped', number>

export type ChaosRpc = {
  url: string
  counts: ChaosCounts
  set(settings: Partial<ChaosSettings>): void
  close(): Promise<void>
}

type RpcCall = { jsonrpc: '2.0'; id: number | string; method: string; params?: unknown[] }
type RpcAnswer = { jsonrpc: '2.0'; id: number | string; result?: unknown; error?: unknown }

const calm: ChaosSettings = { faultRate: 0, faults: httpFaults, laggingShare: 0, maxLag: 0, shuffleBatches: false, swapResults: 0 }

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

const toHex = (n: number) => `0x${n.toString(16)}`
const blockNumberOf = (value: unknown) => (value && typeof value === 'object' && 'number' in value ? Number.parseInt(String(value.number), 16) : undefined)
const receiptBlockOf = (value: unknown) =>
  value && typeof value === 'object' && 'blockNumber' in value ? Number.parseInt(String(value.blockNumber), 16) : undefined

export async function startChaosRpc(options: { target: string; random: Random; hangMs?: number }): Promise<ChaosRpc> {
  const { target, random } = options
  let settings: ChaosSettings = { ...calm }
  const counts: ChaosCounts = { ok: 0, lagging: 0, shuffled: 0, swapped: 0, '429': 0, '500': 0, '502': 0, '503': 0, timeout: 0, truncated: 0, reset: 0, 'rpc-error': 0 }
  const sockets = new Set<Socket>()
  let faultTurn = 0

  async function upstream(body: unknown): Promise<unknown> {
    const response = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return response.json()
  }

  async function upstreamHead(): Promise<number> {
    const answer = (await upstream({ jsonrpc: '2.0', id: 0, method: 'eth_blockNumber', params: [] })) as RpcAnswer
    return Number.parseInt(String(answer.result), 16)
  }

  /** What a node `lag` blocks behind answers: nothing newer than its head, `latest` is its head. */
  async function answerAsLaggingNode(calls: RpcCall[]): Promise<RpcAnswer[]> {
    const lagHead = Math.max(0, (await upstreamHead()) - (1 + Math.floor(random.next() * settings.maxLag)))
    const local = new Map<RpcCall['id'], RpcAnswer>()
    const forwarded = calls.map((call) => {
      if (call.method === 'eth_blockNumber') local.set(call.id, { jsonrpc: '2.0', id: call.id, result: toHex(lagHead) })
      if (call.method === 'eth_getBlockByNumber' && call.params?.[0] === 'latest') return { ...call, params: [toHex(lagHead), ...call.params.slice(1)] }
      return call
    })
    const remote = forwarded.filter((call) => !local.has(call.id))
    const upstreamAnswers = remote.length === 0 ? [] : ((await upstream(remote)) as RpcAnswer[])
    const byId = new Map(upstreamAnswers.map((answer) => [answer.id, answer]))
    return calls.map((call) => {
      const answer = local.get(call.id) ?? byId.get(call.id)!
      const block = call.method.startsWith('eth_getBlockBy') ? blockNumberOf(answer.result) : undefined
      const receiptBlock = call.method === 'eth_getTransactionReceipt' ? receiptBlockOf(answer.result) : undefined
      if ((block !== undefined && block > lagHead) || (receiptBlock !== undefined && receiptBlock > lagHead)) return { ...answer, result: null }
      return answer
    })
  }

  function swapTwoResults(calls: RpcCall[], answers: RpcAnswer[]): RpcAnswer[] {
    const method = calls.find((call, i) => calls.findIndex((other) => other.method === call.method) !== i)?.method
    if (!method) return answers
    const ids = calls.filter((call) => call.method === method).map((call) => call.id)
    const [first, second] = [ids[0], ids[ids.length - 1]]
    const a = answers.find((answer) => answer.id === first)!
    const b = answers.find((answer) => answer.id === second)!
    if (JSON.stringify(a.result) === JSON.stringify(b.result)) return answers
    counts.swapped++
    return answers.map((answer) => (answer === a ? { ...a, result: b.result } : answer === b ? { ...b, result: a.result } : answer))
  }

  function shuffle<T>(items: T[]): T[] {
    const out = [...items]
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(random.next() * (i + 1))
      ;[out[i], out[j]] = [out[j]!, out[i]!]
    }
    return out
  }

  async function handle(request: IncomingMessage, response: ServerResponse) {
    const raw = await readBody(request)
    const parsed = JSON.parse(raw) as RpcCall | RpcCall[]
    const batch = Array.isArray(parsed)
    const calls = batch ? parsed : [parsed]

    if (random.next() < settings.faultRate) {
      // in turn rather than at random, so every kind of fault shows up even in a short run
      const fault = settings.faults[faultTurn++ % settings.faults.length]!
      counts[fault]++
      switch (fault) {
        case '429':
          // a rate limit that says when to come back (0-1 s, so retries stay quick)
          response.writeHead(429, { 'retry-after': String(Math.floor(random.next() * 2)), 'content-type': 'application/json' })
          response.end('{"jsonrpc":"2.0","error":{"code":429,"message":"Too Many Requests"}}')
          return
        case '500':
        case '502':
        case '503':
          response.writeHead(Number(fault), { 'content-type': 'text/html' }).end('<html>upstream unavailable</html>')
          return
        case 'timeout':
          setTimeout(() => response.destroy(), options.hangMs ?? 1_500).unref()
          return
        case 'reset':
          request.socket.destroy()
          return
        case 'rpc-error': {
          const errors = calls.map((call) => ({ jsonrpc: '2.0', id: call.id, error: { code: -32005, message: 'limit exceeded' } }))
          response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(batch ? errors : errors[0]))
          return
        }
        case 'truncated': {
          const text = JSON.stringify(await upstream(parsed))
          response.writeHead(200, { 'content-type': 'application/json' }).end(text.slice(0, Math.max(1, Math.floor(text.length * random.next()))))
          return
        }
      }
    }

    let answers: RpcAnswer[]
    if (random.next() < settings.laggingShare) {
      counts.lagging++
      answers = await answerAsLaggingNode(calls)
    } else {
      counts.ok++
      const answered = (await upstream(parsed)) as RpcAnswer | RpcAnswer[]
      answers = Array.isArray(answered) ? answered : [answered]
    }
    if (random.next() < settings.swapResults) answers = swapTwoResults(calls, answers)
    if (batch && settings.shuffleBatches && answers.length > 1) {
      counts.shuffled++
      answers = shuffle(answers)
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(batch ? answers : answers[0]))
  }

  const server: Server = createServer((request, response) => {
    handle(request, response).catch(() => response.destroy())
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    set(next) {
      settings = { ...settings, ...next }
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
