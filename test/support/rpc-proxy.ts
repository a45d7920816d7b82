import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export type RpcFault = 'ok' | '429' | '500' | '503' | 'timeout' | 'truncated' | 'reset'

export type RpcProxyOptions = {
  target: string
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
    if (chosen === 'truncated') {
      // a body cut mid-way: valid headers, unparseable JSON
      response.writeHead(200, { 'content-type': 'application/json' }).end(text.slice(0, Math.floor(text.length / 2)))
      return
    }
    response.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text)
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
