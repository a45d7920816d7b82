import { isAscii } from 'node:buffer'
import { Agent, request, type Dispatcher } from 'undici'
import { AnswerTooLargeError, type AnswerBuffers } from './answer-buffers.js'
import { UnreadableFramingError } from './http-head.js'
import { createSocketClient } from './http-socket.js'

export { UnreadableFramingError }

/**
 * What one HTTP POST to the node came back with, before any JSON-RPC
 * reading: the body's bytes, and its text decoded on first use (a fast path
 * that reads the bytes never pays for decoding megabytes of UTF-8). The
 * bytes live in a reused buffer (answer-buffers.ts): read them, then
 * `release()` the answer, and keep no view of `body` past that.
 */
export type HttpAnswer = {
  status: number
  body: Buffer
  readonly text: string
  retryAfterMs: number | undefined
  ms: number
  release(): void
}

export function httpAnswer(status: number, body: Buffer, retryAfterMs: number | undefined, ms: number, release: () => void = () => {}): HttpAnswer {
  let text: string | undefined
  return {
    status,
    body,
    get text() {
      return (text ??= decodeBody(body))
    },
    retryAfterMs,
    ms,
    release,
  }
}

/**
 * The body as text. A JSON-RPC answer is ASCII but for the odd error
 * message: checked in a fraction of a millisecond, ASCII decodes as Latin-1
 * (the same characters) by a plain copy, about eight times faster than the
 * UTF-8 decoder validates it (megabytes per answer on a chain of full blocks).
 */
export function decodeBody(body: Buffer): string {
  return isAscii(body) ? body.toString('latin1') : body.toString('utf8')
}

/** Reads a body into a reused buffer, sized by Content-Length when the node sends one, grown as bytes arrive beyond it. */
async function readBody(chunks: AsyncIterable<Buffer>, contentLength: number, buffers: AnswerBuffers): Promise<{ buffer: Buffer; length: number }> {
  let buffer = buffers.reserve(contentLength)
  let length = 0
  try {
    for await (const chunk of chunks) {
      if (length + chunk.length > buffer.length) buffer = buffers.grow(buffer, length, length + chunk.length)
      chunk.copy(buffer, length)
      length += chunk.length
    }
  } catch (error) {
    buffers.giveBack(buffer)
    throw error
  }
  return { buffer, length }
}

/** The node did not answer within the request timeout. */
export class RpcTimeoutError extends Error {
  override name = 'RpcTimeoutError'
  constructor(readonly timeoutMs: number) {
    super(`the node did not answer within ${timeoutMs} ms`)
  }
}

/** The connection failed or broke before a whole answer arrived. */
export class RpcNetworkError extends Error {
  override name = 'RpcNetworkError'
}

export function parseRetryAfter(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header
  if (!value) return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

/** Which client carries http URLs: the project's socket reader (the default), or undici (RPC_HTTP_CLIENT=undici, the escape hatch). */
export type HttpClientKind = 'socket' | 'undici'

export type HttpPosterOptions = {
  client?: HttpClientKind
  /** Most connections open to one host and port (a transport gives its most requests in flight). */
  maxConnectionsPerHost?: number
}

/**
 * One transport's HTTP client: POSTs one JSON-RPC body and reads the whole
 * answer into a buffer of `buffers`, whatever its status; the caller
 * releases it once read. An http URL goes over the project's socket reader
 * (http-socket.ts: the answer lands in the buffer with no copy), unless
 * `client` is undici; an https one always over undici. Its connections
 * (both clients') are its own, at most `maxConnectionsPerHost` to a host.
 */
export function createHttpPoster(options: HttpPosterOptions = {}) {
  const connections = options.maxConnectionsPerHost ?? 16
  const socket = createSocketClient({ maxConnectionsPerHost: connections })
  let agent: Agent | undefined
  const dispatcher = () => (agent ??= new Agent({ connections }))
  return {
    post(url: string, requestBody: string, timeoutMs: number, buffers: AnswerBuffers): Promise<HttpAnswer> {
      if (options.client === 'undici' || !url.startsWith('http:')) return postJsonOverUndici(url, requestBody, timeoutMs, buffers, dispatcher())
      return timedPost(timeoutMs, buffers, (signal) => socket.post(url, requestBody, buffers, signal))
    },
    /** Connections the socket reader has open to the host of `url`. */
    socketsOpenTo: (url: string) => socket.openTo(url),
    async close() {
      socket.close()
      await agent?.close()
    },
  }
}

export type HttpPoster = ReturnType<typeof createHttpPoster>

/**
 * postJson over undici's request API, for https URLs (and the bench's plain
 * client). Not fetch: a batch of full blocks is megabytes, and fetch's web
 * streams copied and decoded it in small steps (about a fifth of the
 * indexer's CPU in the backfill profile).
 */
export function postJsonOverUndici(url: string, requestBody: string, timeoutMs: number, buffers: AnswerBuffers, dispatcher?: Dispatcher): Promise<HttpAnswer> {
  return timedPost(timeoutMs, buffers, async (signal) => {
    const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: requestBody, signal, ...(dispatcher && { dispatcher }) })
    const declared = Number(response.headers['content-length'])
    if (declared > buffers.mostBytes) {
      response.body.destroy()
      throw new AnswerTooLargeError(buffers.mostBytes)
    }
    const { buffer, length } = await readBody(response.body as AsyncIterable<Buffer>, Number.isSafeInteger(declared) && declared > 0 ? declared : 0, buffers)
    return { status: response.statusCode, buffer, length, retryAfter: response.headers['retry-after'] }
  })
}

type RawAnswer = { status: number; buffer: Buffer; length: number; retryAfter: string | string[] | undefined }

/** One POST under a timeout, whichever client sends it: its answer as an HttpAnswer, its failure as a timeout or a network error. */
async function timedPost(timeoutMs: number, buffers: AnswerBuffers, post: (signal: AbortSignal) => Promise<RawAnswer>): Promise<HttpAnswer> {
  const started = performance.now()
  const signal = AbortSignal.timeout(timeoutMs)
  try {
    const { status, buffer, length, retryAfter } = await post(signal)
    let released = false
    const release = () => {
      if (!released) buffers.giveBack(buffer)
      released = true
    }
    return httpAnswer(status, buffer.subarray(0, length), parseRetryAfter(retryAfter), performance.now() - started, release)
  } catch (error) {
    if (signal.aborted) throw new RpcTimeoutError(timeoutMs)
    // what the answer was, not how the connection fared: the transport reacts to each by its kind
    const reason = error instanceof AnswerTooLargeError || error instanceof UnreadableFramingError ? error : (error as Error).cause
    if (reason instanceof AnswerTooLargeError || reason instanceof UnreadableFramingError) throw reason
    throw new RpcNetworkError(`request to the node failed: ${(error as Error).message}`, { cause: error })
  }
}
