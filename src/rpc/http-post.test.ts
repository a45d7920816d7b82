import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAnswerBuffers } from './answer-buffers.js'
import { decodeBody, postJson, postJsonOverUndici, RpcNetworkError } from './http-post.js'

/** A node that declares `declared` bytes and sends `body`, then ends the connection. */
function lyingNode(declared: number, body: string): Promise<Server> {
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      response.socket!.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${declared}\r\n\r\n${body}`)
      response.socket!.end()
    })
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

// the socket reader (http URLs) and undici (https URLs, the bench's plain client) keep the same promises
describe.each([
  ['postJson (socket reader)', postJson],
  ['postJsonOverUndici', postJsonOverUndici],
])('%s', (_, post) => {
  let server: Server
  beforeAll(async () => {
    server = await lyingNode(1_500_000_000, '{"jsonrpc":"2.0","id":0,"result":"0x1"}')
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it('does not reserve what a Content-Length claims: 1.5 GB declared and a short body cost a network error, not 1.5 GB', async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const before = process.memoryUsage().arrayBuffers
    let peak = before
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 1)
    const error = await post(url, '{}', 5_000, createAnswerBuffers({ kept: 1 })).catch((caught: unknown) => caught)
    clearInterval(sampler)
    peak = Math.max(peak, process.memoryUsage().arrayBuffers)
    expect(error).toBeInstanceOf(RpcNetworkError)
    expect(peak - before).toBeLessThan(64 * 2 ** 20)
  })

  it('reads an answer whole, whatever its size, and gives it back once released', async () => {
    const answerBody = JSON.stringify({ jsonrpc: '2.0', id: 0, result: 'x'.repeat(3_000_000) })
    const honest = createServer((request, response) => {
      request.resume()
      request.on('end', () => response.end(answerBody))
    })
    await new Promise<void>((resolve) => honest.listen(0, '127.0.0.1', () => resolve()))
    try {
      const buffers = createAnswerBuffers({ kept: 2 })
      const answer = await post(`http://127.0.0.1:${(honest.address() as AddressInfo).port}`, '{}', 5_000, buffers)
      expect(answer.status).toBe(200)
      expect(answer.body.length).toBe(answerBody.length)
      expect(answer.text).toBe(answerBody)
      expect(buffers.held.count).toBe(0)
      answer.release()
      answer.release()
      // back in the transport's own pool, once however often released
      expect(buffers.held.count).toBe(1)
    } finally {
      await new Promise<void>((resolve) => honest.close(() => resolve()))
    }
  })
})

describe('decodeBody', () => {
  it('reads ASCII and UTF-8 answers as their text, whichever way it decodes them', () => {
    for (const text of ['{"jsonrpc":"2.0","id":0,"result":"0xabc"}', '{"error":{"message":"nœud indisponible — réessayez ✓"}}', '']) {
      expect(decodeBody(Buffer.from(text, 'utf8'))).toBe(text)
    }
  })
})
