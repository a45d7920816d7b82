import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export type ProxyMode =
  /** Pass every call to the node. */
  | 'forward'
  /** Accept the connection and never answer: the client's timeout must fire. */
  | 'hang'
  /** Answer HTTP 500, as a broken gateway in front of a node does. */
  | 'error'

type JsonRpcCall = { id: unknown; method: string; params?: unknown[] }

/**
 * A JSON-RPC proxy in front of anvil that can misbehave on demand: hang,
 * fail, or refuse eth_getLogs over more than `maxLogRange` blocks the way
 * hosted providers do. It also counts eth_getLogs calls.
 */
export async function startRpcProxy(target: string, options: { maxLogRange?: number } = {}) {
  let mode: ProxyMode = 'forward'
  let getLogsCalls = 0
  const hanging = new Set<ServerResponse>()

  function refusal(call: JsonRpcCall) {
    if (call.method !== 'eth_getLogs' || options.maxLogRange === undefined) return undefined
    const filter = (call.params?.[0] ?? {}) as { fromBlock?: string; toBlock?: string }
    const span = Number(filter.toBlock) - Number(filter.fromBlock) + 1
    if (span <= options.maxLogRange) return undefined
    return { jsonrpc: '2.0', id: call.id, error: { code: -32005, message: `block range too large: ${span} > ${options.maxLogRange}` } }
  }

  async function handle(request: IncomingMessage, response: ServerResponse) {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks).toString('utf8')
    if (mode === 'hang') {
      hanging.add(response)
      response.on('close', () => hanging.delete(response))
      return
    }
    if (mode === 'error') {
      response.writeHead(500, { 'content-type': 'text/plain' }).end('upstream exploded')
      return
    }
    const call = JSON.parse(body) as JsonRpcCall
    if (call.method === 'eth_getLogs') getLogsCalls++
    const refused = refusal(call)
    if (refused) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(refused))
      return
    }
    const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    response.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text())
  }

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: Error) => response.writeHead(502).end(error.message))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    setMode(next: ProxyMode) {
      mode = next
    },
    getLogsCalls: () => getLogsCalls,
    async stop() {
      for (const response of hanging) response.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

export type RpcProxy = Awaited<ReturnType<typeof startRpcProxy>>
