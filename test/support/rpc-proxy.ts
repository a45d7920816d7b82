import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export type RpcFault = 'ok' | '429' | '500' | '503' | 'timeout' | 'truncated' | 'reset'

/**
 * Limits real nodes apply, each in the shape the node answers with:
 * - batchLimit: Erigon (one error object, id null, -32000 "batch limit N exceeded"), Besu (-32602
 *   "Number of requests in batch exceeds limit of N", per call), HTTP 413, or HTTP 400 naming the batch;
 * - maxResponseBytes: geth's batch response size limit (calls past it get -32003 "response too large");
 * - noBatches: a provider that takes single calls only (id null, -32600);
 * - msPerCall: a slow node, the answer delayed by this much per call of the request;
 * - rateLimit: at most `requests` per `windowMs`, then 429 with Retry-After `retryAfterS`.
 */
export type RpcLimits = {
  batchLimit?: { max: number; shape: 'erigon' | 'besu' | 'http413' | 'http400' }
  maxResponseBytes?: number
  noBatches?: boolean
  msPerCall?: number
  rateLimit?: { requests: number; windowMs: number; retryAfterS: number }
}

export type LimitCounts = Record<'batch_refused' | 'too_large' | 'no_batches' | 'rate_limited' | 'delayed', number>

export type RpcProxyOptions = {
  target: string
  limits?: RpcLimits
  /** Picks the fault for each HTTP request; the parsed JSON-RPC body is given for method-aware faults. */
  fault?: (body: unknown) => RpcFault
  /** How long a `timeout` fault holds the request before dropping it. */
  hangMs?: number
  /** Rewrites a successful JSON-RPC response body (e.g. to act as a node that lags). */
  rewrite?: (request: unknown, response: unknown) => unknown
}

export type RpcProxy = {
  url: string
  /** Counts of faults injected so far. */
  counts: Record<RpcFault, number>
  /** Requests answered with each limit so far. */
  limitCounts: LimitCounts
  /** Calls per request seen so far, in order (to check how the client's batches settled). */
  batchLengths: number[]
  setLimits(limits: RpcLimits): void
  setFault(fault: RpcProxyOptions['fault']): void
  setRewrite(rewrite: RpcProxyOptions['rewrite']): void
  close(): Promise<void>
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * An HTTP JSON-RPC proxy in front of a node that misbehaves on purpose: rate
 * limits with Retry-After, server errors, requests that hang past the
 * client's timeout, bodies cut in half and dropped connections.
 */
export async function startRpcProxy(options: RpcProxyOptions): Promise<RpcProxy> {
  let fault = options.fault ?? (() => 'ok' as RpcFault)
  let rewrite = options.rewrite
  let limits: RpcLimits = options.limits ?? {}
  const limitCounts: LimitCounts = { batch_refused: 0, too_large: 0, no_batches: 0, rate_limited: 0, delayed: 0 }
  const batchLengths: number[] = []
  let window = { startedAt: 0, requests: 0 }
  const counts: Record<RpcFault, number> = { ok: 0, '429': 0, '500': 0, '503': 0, timeout: 0, truncated: 0, reset: 0 }
  const hangMs = options.hangMs ?? 3_000
  const sockets = new Set<import('node:net').Socket>()

  async function handle(request: IncomingMessage, response: ServerResponse) {
    const raw = await readBody(request)
    let parsed: unknown
    try {
      parsed = JSON.parse(raw)
    } catch {
      parsed = undefined
    }
    if (Array.isArray(parsed) || (parsed && typeof parsed === 'object')) batchLengths.push(Array.isArray(parsed) ? parsed.length : 1)
    const refused = refuseByLimit(parsed)
    if (refused) {
      if (refused.delayMs === undefined) return void response.writeHead(refused.status, refused.headers).end(refused.body)
      limitCounts.delayed++
      await new Promise((resolve) => setTimeout(resolve, refused.delayMs))
      if (response.destroyed) return
    }
    const chosen = fault(parsed)
    counts[chosen]++
    switch (chosen) {
      case '429':
        response.writeHead(429, { 'retry-after': '0', 'content-type': 'application/json' }).end('{"error":"rate limited"}')
        return
      case '500':
      case '503':
        response.writeHead(Number(chosen), { 'content-type': 'text/plain' }).end('upstream unavailable')
        return
      case 'timeout':
        setTimeout(() => response.destroy(), hangMs).unref()
        return
      case 'reset':
        request.socket.destroy()
        return
    }
    const upstream = await fetch(options.target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw })
    let text = await upstream.text()
    if (rewrite && upstream.ok && parsed !== undefined) text = JSON.stringify(rewrite(parsed, JSON.parse(text)))
    if (limits.maxResponseBytes !== undefined && Array.isArray(parsed)) text = capResponseSize(text, limits.maxResponseBytes)
    if (chosen === 'truncated') {
      // a body cut mid-way: valid headers, unparseable JSON
      response.writeHead(200, { 'content-type': 'application/json' }).end(text.slice(0, Math.floor(text.length / 2)))
      return
    }
    response.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text)
  }

  const json = { 'content-type': 'application/json' }
  type Refusal = { status: number; headers: Record<string, string>; body: string; delayMs?: undefined } | { delayMs: number }

  /** The answer a limited node gives instead of forwarding, if a limit applies; a delay for a slow node. */
  function refuseByLimit(parsed: unknown): Refusal | undefined {
    const calls = Array.isArray(parsed) ? (parsed as Array<{ id: unknown }>) : undefined
    const error = (id: unknown, code: number, message: string) => ({ jsonrpc: '2.0', id, error: { code, message } })
    if (limits.rateLimit) {
      const now = Date.now()
      if (now - window.startedAt >= limits.rateLimit.windowMs) window = { startedAt: now, requests: 0 }
      if (++window.requests > limits.rateLimit.requests) {
        limitCounts.rate_limited++
        return { status: 429, headers: { ...json, 'retry-after': String(limits.rateLimit.retryAfterS) }, body: JSON.stringify(error(null, 429, 'Too Many Requests')) }
      }
    }
    if (calls && limits.noBatches) {
      limitCounts.no_batches++
      return { status: 200, headers: json, body: JSON.stringify(error(null, -32600, 'batch requests are not supported')) }
    }
    const batchLimit = limits.batchLimit
    if (calls && batchLimit && calls.length > batchLimit.max) {
      limitCounts.batch_refused++
      const { max } = batchLimit
      switch (batchLimit.shape) {
        case 'erigon':
          return { status: 200, headers: json, body: JSON.stringify(error(null, -32000, `batch limit ${max} exceeded: ${calls.length} requests given`)) }
        case 'besu':
          return {
            status: 200,
            headers: json,
            body: JSON.stringify(calls.map((call) => error(call.id, -32602, `Number of requests in batch exceeds limit of ${max}`))),
          }
        case 'http413':
          return { status: 413, headers: { 'content-type': 'text/plain' }, body: 'Request Entity Too Large' }
        case 'http400':
          return { status: 400, headers: { 'content-type': 'text/plain' }, body: `batch size ${calls.length} exceeds the maximum of ${max}` }
      }
    }
    if (limits.msPerCall) return { delayMs: limits.msPerCall * (calls?.length ?? 1) }
    return undefined
  }

  /** geth's batch response limit: once the answers pass `max` bytes, every remaining call gets -32003. */
  function capResponseSize(text: string, max: number): string {
    const answers = JSON.parse(text) as Array<{ id: unknown }>
    let bytes = 0
    let capped = false
    const out = answers.map((answer) => {
      bytes += JSON.stringify(answer).length
      if (bytes <= max) return answer
      capped = true
      return { jsonrpc: '2.0', id: answer.id, error: { code: -32003, message: 'response too large' } }
    })
    if (capped) limitCounts.too_large++
    return JSON.stringify(out)
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
    limitCounts,
    batchLengths,
    setLimits: (next) => {
      limits = next
    },
    setFault: (next) => {
      fault = next ?? (() => 'ok')
    },
    setRewrite: (next) => {
      rewrite = next
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** Every `every`-th request fails, cycling through the faults in order: each kind is injected, deterministically. */
export function rotatingFaults(every: number, faults: RpcFault[]): (body: unknown) => RpcFault {
  let requests = 0
  return () => {
    requests++
    return requests % every === 0 ? faults[(requests / every) % faults.length]! : 'ok'
  }
}
