import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A JSON-RPC node a test scripts call by call: each request's calls handed
 * to `serve` as they came (a batch or one call), answered however the test
 * says. The transport's tests build their nodes (capped, refusing, slow) on it.
 */

export type Call = { id: number; params: [string] }

/** A JSON-RPC node on a free port: `serve` answers each request's calls (`batch`: they came as a batch). */
export async function startNode(serve: (calls: Call[], batch: boolean, res: ServerResponse, req: IncomingMessage) => void): Promise<{ server: Server; url: string }> {
  const node = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      const parsed = JSON.parse(body) as Call | Call[]
      serve(Array.isArray(parsed) ? parsed : [parsed], Array.isArray(parsed), res, req)
    })
  })
  await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve))
  return { server: node, url: `http://127.0.0.1:${(node.address() as AddressInfo).port}` }
}

/** Each call answered with `result(call)`, as a batch or as the single answer. */
export function answerEach(res: ServerResponse, calls: Call[], batch: boolean, result: (call: Call) => unknown) {
  const answers = calls.map((call) => ({ jsonrpc: '2.0', id: call.id, result: result(call) }))
  res.setHeader('content-type', 'application/json')
  res.end(JSON.stringify(batch ? answers : answers[0]))
}

/** A 429 as providers send it, with `retryAfter` seconds. */
export function refuse(res: ServerResponse, retryAfter: string) {
  res.writeHead(429, { 'retry-after': retryAfter, 'content-type': 'application/json' })
  res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"too many requests"}}')
}
