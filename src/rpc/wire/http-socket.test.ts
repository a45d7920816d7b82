import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { createAnswerBuffers } from './answer-buffers.js'
import { createSocketClient } from './http-socket.js'

/**
 * The socket reader against servers that answer byte for byte as written
 * here: every framing, split at every awkward place, and the ways a
 * connection breaks.
 */


/** In a list of writes: the server ends the connection there, once the writes before it are sent. */
const END = Symbol('end')

type Raw = { url: string; connections: () => number; requests: string[] }

/** Closes a server now, its kept-alive connections included (the client keeps them a few seconds). */
function closeNow(server: Server | NetServer, sockets: Set<Socket>): Promise<unknown> {
  for (const socket of sockets) socket.destroy()
  return new Promise((resolve) => server.close(resolve))
}
const closers: Array<() => Promise<unknown>> = []

/** A TCP server that reads each request whole (head + Content-Length) and answers with `answer(request, n)`: the writes, each sent apart. */
async function rawServer(answer: (request: string, n: number, socket: Socket) => Array<string | Buffer | typeof END> | 'hang' | 'close', host = '127.0.0.1'): Promise<Raw> {
  let connections = 0
  const requests: string[] = []
  const sockets = new Set<Socket>()
  const server = createNetServer((socket) => {
    connections++
    sockets.add(socket)
    let pending = Buffer.alloc(0)
    socket.on('error', () => {})
    socket.on('data', async (data) => {
      pending = Buffer.concat([pending, data])
      for (;;) {
        const headEnd = pending.indexOf('\r\n\r\n')
        if (headEnd < 0) return
        const length = Number(/content-length: (\d+)/i.exec(pending.toString('latin1', 0, headEnd))?.[1] ?? 0)
        if (pending.length < headEnd + 4 + length) return
        const request = pending.toString('utf8', 0, headEnd + 4 + length)
        pending = pending.subarray(headEnd + 4 + length)
        requests.push(request)
        const writes = answer(request, requests.length, socket)
        if (writes === 'hang') return
        if (writes === 'close') return void socket.destroy()
        for (const write of writes) {
          if (socket.destroyed) return
          if (write === END) {
            socket.end()
            continue
          }
          socket.write(write)
          // apart, so the client's reads see the pieces as sent
          await sleep(2)
        }
      }
    })
  })
  closers.push(() => closeNow(server, sockets))
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()))
  const hostInUrl = host.includes(':') ? `[${host}]` : host
  return { url: `http://${hostInUrl}:${(server.address() as AddressInfo).port}/rpc?key=abc`, connections: () => connections, requests }
}

afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

/** This file's client: its connections kept alive from one request to the next, as a transport's are. */
const client = createSocketClient()
const postOverSocket = client.post
const buffers = () => createAnswerBuffers({ kept: 4 })
const signal = () => AbortSignal.timeout(5_000)

async function text(url: string, body = '{}') {
  const answer = await postOverSocket(url, body, buffers(), signal())
  return { status: answer.status, text: answer.buffer.toString('latin1', 0, answer.length), retryAfter: answer.retryAfter }
}

function chunked(body: string, sizes: number[]): string {
  let out = ''
  let at = 0
  for (const size of sizes) {
    out += `${size.toString(16)}\r\n${body.slice(at, at + size)}\r\n`
    at += size
  }
  return `${out}0\r\n\r\n`
}

describe('postOverSocket', () => {
  it('sends the path, query, host, type and exact byte length, and reads a Content-Length answer', async () => {
    const body = '{"jsonrpc":"2.0","id":0,"result":"0x1"}'
    const server = await rawServer(() => [`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`])
    expect(await text(server.url, '{"note":"é"}')).toEqual({ status: 200, text: body, retryAfter: undefined })
    const request = server.requests[0]!
    expect(request).toMatch(/^POST \/rpc\?key=abc HTTP\/1\.1\r\n/)
    expect(request).toMatch(/\r\nHost: 127\.0\.0\.1:\d+\r\n/)
    expect(request).toMatch(/\r\nContent-Type: application\/json\r\n/)
    // é is two bytes
    expect(request).toMatch(/\r\nContent-Length: 13\r\n\r\n\{"note":"é"\}$/)
  })

  it('reads a chunked answer split at every awkward place: inside size lines, CRLFs, data, with extensions and trailers', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 0, result: 'ab'.repeat(50_000) })
    const wire = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${chunked(body, [1, 4095, 7, 60_000, 30_000, body.length - 94_103]).replace('fff\r\n', 'fff;ext=1\r\n').replace(/0\r\n\r\n$/, '0\r\nX-Trailer: t\r\n\r\n')}`
    // pieces of 1 to 13 bytes at the start (head, first size lines), then large ones
    const pieces: string[] = []
    let at = 0
    for (let i = 1; at < 200; i = (i % 13) + 1) pieces.push(wire.slice(at, (at += i)))
    for (; at < wire.length; ) pieces.push(wire.slice(at, (at += 30_011)))
    const server = await rawServer(() => pieces)
    expect((await text(server.url)).text).toBe(body)
  })

  it('keeps a connection alive between answers, and opens another only when one is busy', async () => {
    const server = await rawServer((_, n) => [`HTTP/1.1 200 OK\r\nContent-Length: ${String(n).length}\r\n\r\n${n}`])
    for (let i = 1; i <= 5; i++) expect((await text(server.url)).text).toBe(String(i))
    expect(server.connections()).toBe(1)
    const together = await Promise.all([text(server.url), text(server.url)])
    expect(together.map((answer) => answer.text).sort()).toEqual(['6', '7'])
    expect(server.connections()).toBe(2)
  })

  it('reads an answer framed by the connection closing, skips a 100 Continue head, and keeps the status and Retry-After', async () => {
    const server = await rawServer((_, n) => {
      if (n === 1) return ['HTTP/1.1 100 Continue\r\n\r\n', 'HTTP/1.0 429 Too Many Requests\r\nRetry-After: 2\r\n\r\n', '{"error":', '"slow down"}', END]
      return [`HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok`]
    })
    expect(await text(server.url)).toEqual({ status: 429, text: '{"error":"slow down"}', retryAfter: '2' })
    // that connection ended with its answer: the next request opens another
    expect((await text(server.url)).text).toBe('ok')
    expect(server.connections()).toBe(2)
  })

  it('fails, never answers short, when the connection closes mid-answer or mid-chunk, or the answer is not HTTP', async () => {
    const cut = await rawServer((_, __, socket) => {
      setTimeout(() => socket.destroy(), 20)
      return [`HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"jsonrpc"`]
    })
    await expect(text(cut.url)).rejects.toThrow(/closed before the whole answer/)
    const cutChunk = await rawServer((_, __, socket) => {
      setTimeout(() => socket.destroy(), 20)
      return ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{"jsonrpc"']
    })
    await expect(text(cutChunk.url)).rejects.toThrow(/closed before the whole answer/)
    const html = await rawServer(() => ['<html><body>Bad gateway</body></html>\r\n\r\n'])
    await expect(text(html.url)).rejects.toThrow(/not HTTP\/1\.x/)
    const badChunk = await rawServer(() => ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n'])
    await expect(text(badChunk.url)).rejects.toThrow(/invalid chunk size/)
    const longSize = await rawServer(() => ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n000000002\r\nab\r\n0\r\n\r\n'])
    await expect(text(longSize.url)).rejects.toThrow(/invalid chunk size: "000000002"/)
    const blanks = await rawServer(() => ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 2 ;x=y\r\nab\r\n\t0\t\r\n\r\n'])
    expect((await text(blanks.url)).text).toBe('ab')
    const reset = await rawServer(() => 'close')
    await expect(text(reset.url)).rejects.toThrow(/closed before the whole answer/)
  })

  it('takes an answer followed by stray bytes, and does not use that connection again', async () => {
    const server = await rawServer((_, n) =>
      n === 1 ? [`HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA`] : [`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n\r\n`],
    )
    for (let i = 0; i < 3; i++) expect((await text(server.url)).text).toBe('ok')
    expect(server.connections()).toBe(3)
  })

  it('names the cause of a refused connection', async () => {
    const closed = await rawServer(() => [])
    const url = closed.url
    await closers.splice(0).reduce((done, close) => done.then(close), Promise.resolve<unknown>(undefined))
    const error = await text(url).catch((caught: Error) => caught)
    expect(error).toMatchObject({ name: 'SocketExchangeError', cause: { code: 'ECONNREFUSED' } })
  })

  it('gives up when the signal aborts, gives the buffer back, and the next request gets a new connection', async () => {
    const server = await rawServer((_, n) => (n === 1 ? ['HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{"partial'] : ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok']))
    const pool = buffers()
    await expect(postOverSocket(server.url, '{}', pool, AbortSignal.timeout(100))).rejects.toThrow(/aborted/)
    expect(pool.held.count).toBe(1)
    expect((await text(server.url)).text).toBe('ok')
    expect(server.connections()).toBe(2)
  })

  it('reads a 40 MB answer from node:http (chunked, then with a length) into one buffer', async () => {
    const body = JSON.stringify({ result: 'x'.repeat(40_000_000) })
    let withLength = false
    const server = createServer((request, response) => {
      request.resume()
      request.on('end', () => {
        if (withLength) response.setHeader('content-length', body.length)
        response.end(body)
      })
    })
    closers.push(() => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(resolve))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    for (withLength of [false, true]) {
      // 40 MB through node:http on a machine shared with other test files: the default 5 s is no measure here
      const answer = await postOverSocket(url, '{}', buffers(), AbortSignal.timeout(60_000))
      expect(answer.length).toBe(body.length)
      expect(answer.buffer.toString('latin1', 0, answer.length)).toBe(body)
    }
  })

  it('keeps the brackets of an IPv6 host in the Host header', async () => {
    const server = await rawServer(() => ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'], '::1')
    expect((await text(server.url)).text).toBe('ok')
    expect(server.requests[0]).toContain(`\r\nHost: [::1]:${new URL(server.url).port}\r\n`)
  })

  it.each(['gzip, chunked', 'chunked, chunked', 'identity'])('refuses the transfer coding %j at the head, by name, and closes the connection', async (coding) => {
    const server = await rawServer(() => [`HTTP/1.1 200 OK\r\nTransfer-Encoding: ${coding}\r\n\r\n2\r\nok\r\n0\r\n\r\n`])
    const error = await text(server.url).catch((caught: Error) => caught)
    expect(error).toMatchObject({ name: 'SocketExchangeError', cause: { name: 'UnreadableFramingError' } })
    expect((error as Error).message).toContain('transfer coding')
  })

  it('refuses a second Transfer-Encoding line as it refuses two codings in one', async () => {
    const server = await rawServer(() => ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n'])
    expect(await text(server.url).catch((caught: Error) => caught)).toMatchObject({ cause: { name: 'UnreadableFramingError' } })
  })

  it('opens at most its cap of connections to a host: a request past it waits for one to come back', async () => {
    const capped = createSocketClient({ maxConnectionsPerHost: 2 })
    let answered = 0
    const server = await rawServer((_, n) => {
      answered = n
      return ['HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok']
    })
    const answers = await Promise.all(Array.from({ length: 6 }, () => capped.post(server.url, '{}', buffers(), signal())))
    expect(answers.map((answer) => answer.buffer.toString('latin1', 0, answer.length))).toEqual(new Array(6).fill('ok'))
    expect(answered).toBe(6)
    expect(server.connections()).toBe(2)
    expect(capped.openTo(server.url)).toBe(2)
    capped.close()
  })

  it('gives a waiting request a new connection when one closes instead of coming back', async () => {
    const capped = createSocketClient({ maxConnectionsPerHost: 1 })
    const server = await rawServer(() => ['HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok'])
    const answers = await Promise.all(Array.from({ length: 3 }, () => capped.post(server.url, '{}', buffers(), signal())))
    expect(answers.map((answer) => answer.length)).toEqual([2, 2, 2])
    expect(server.connections()).toBe(3)
  })
})
