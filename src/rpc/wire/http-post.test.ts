import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AnswerTooLargeError, createAnswerBuffers } from './answer-buffers.js'
import { createHttpPoster, decodeBody, postJsonOverUndici, RpcNetworkError, UnreadableFramingError } from './http-post.js'
import { streamEndlessly } from '../../../test/support/rpc-proxy.js'

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

/** A node that answers every request with a chunked body that never ends (a megabyte a chunk, as fast as it is read). */
function endlessNode(): Promise<Server> {
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => streamEndlessly(response))
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

// the socket reader (http URLs) and undici (https URLs, the bench's plain client) keep the same promises
describe.each([
  ['the socket reader', createHttpPoster().post],
  ['undici (RPC_HTTP_CLIENT=undici)', createHttpPoster({ client: 'undici' }).post],
  ['postJsonOverUndici', postJsonOverUndici],
])('%s', (_, post) => {
  let server: Server
  let overTheMost: Server
  let endless: Server
  beforeAll(async () => {
    server = await lyingNode(200_000_000, '{"jsonrpc":"2.0","id":0,"result":"0x1"}')
    overTheMost = await lyingNode(1_500_000_000, '{"jsonrpc":"2.0","id":0,"result":"0x1"}')
    endless = await endlessNode()
  })
  afterAll(() => Promise.all([server, overTheMost, endless].map((node) => new Promise<void>((resolve) => node.close(() => resolve())))))

  /** The error of `request`, and how far the process's Buffer memory rose while it ran. */
  async function failureAndPeak(request: () => Promise<unknown>) {
    const before = process.memoryUsage().arrayBuffers
    let peak = before
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 1)
    const error = await request().catch((caught: unknown) => caught)
    clearInterval(sampler)
    peak = Math.max(peak, process.memoryUsage().arrayBuffers)
    return { error, rose: peak - before }
  }

  it('does not reserve what a Content-Length claims: 200 MB declared and a short body cost a network error, not 200 MB', async () => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const { error, rose } = await failureAndPeak(() => post(url, '{}', 5_000, createAnswerBuffers({ kept: 1 })))
    expect(error).toBeInstanceOf(RpcNetworkError)
    expect(rose).toBeLessThan(64 * 2 ** 20)
  })

  it('refuses an answer declaring more than the most an answer may have (256 MiB by default) before reading it', async () => {
    const url = `http://127.0.0.1:${(overTheMost.address() as AddressInfo).port}`
    const { error, rose } = await failureAndPeak(() => post(url, '{}', 5_000, createAnswerBuffers({ kept: 1 })))
    expect(error).toBeInstanceOf(AnswerTooLargeError)
    expect((error as AnswerTooLargeError).mostBytes).toBe(256 * 2 ** 20)
    expect(rose).toBeLessThan(64 * 2 ** 20)
  })

  it('stops reading an endless body at the most an answer may have, long before the timeout, and gives its buffer back', async () => {
    const url = `http://127.0.0.1:${(endless.address() as AddressInfo).port}`
    const buffers = createAnswerBuffers({ kept: 2, mostBytes: 8 * 2 ** 20 })
    const started = performance.now()
    const { error, rose } = await failureAndPeak(() => post(url, '{}', 60_000, buffers))
    expect(error).toBeInstanceOf(AnswerTooLargeError)
    expect(performance.now() - started).toBeLessThan(30_000)
    // the buffer grew to the cap at most (8 MiB), and it is back in the pool with the one it grew from
    expect(rose).toBeLessThan(48 * 2 ** 20)
    expect(buffers.held).toEqual({ count: 2, bytes: 12 * 2 ** 20 })
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

describe('an answer in a transfer coding the socket reader does not read', () => {
  /** A node that answers `Transfer-Encoding: gzip, chunked` (the body itself plain: what matters is the head). */
  function gzipChunkedNode(): Promise<Server> {
    const server = createServer((request, response) => {
      request.resume()
      request.on('end', () => {
        response.socket!.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n')
        response.socket!.end()
      })
    })
    return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
  }

  it('is refused at its head as UnreadableFramingError, naming the escape hatch, not a network error', async () => {
    const node = await gzipChunkedNode()
    try {
      const url = `http://127.0.0.1:${(node.address() as AddressInfo).port}`
      const error = await createHttpPoster().post(url, '{}', 5_000, createAnswerBuffers({ kept: 1 })).catch((caught: Error) => caught)
      expect(error).toBeInstanceOf(UnreadableFramingError)
      expect((error as Error).message).toContain('RPC_HTTP_CLIENT=undici')
    } finally {
      node.closeAllConnections()
      await new Promise<void>((resolve) => node.close(() => resolve()))
    }
  })
})
