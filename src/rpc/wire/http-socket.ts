import { connect, type Socket } from 'node:net'
import { AnswerTooLargeError, type AnswerBuffers } from './answer-buffers.js'

/**
 * POST over plain HTTP/1.1 with the answer read straight into a pool buffer.
 *
 * A backfill reads gigabytes of answers. An HTTP client hands them over as
 * chunks of fresh memory that are then copied into the pool buffer: the
 * copy, the allocations and their collection were a fifth of the indexer's
 * main thread on the everyday bench chain (BENCHMARKS.md). Here the socket
 * reads (`onread`) land in the pool buffer itself, so the kernel's copy is
 * the only one; a chunked answer is compacted in place as it arrives.
 *
 * What it speaks: one request at a time per connection, kept alive and
 * reused; answers framed by Content-Length, chunked transfer encoding, or
 * the connection's end; informational (1xx) heads skipped. No TLS (an
 * https URL goes through undici: http-post.ts), no compression (none is
 * asked for), no redirects, no proxy. A connection that misbehaves (bytes
 * while idle or past its answer, a malformed head or chunk) is closed,
 * never reused.
 */

export type SocketAnswer = { status: number; buffer: Buffer; length: number; retryAfter: string | undefined }

/** The connection failed or broke before a whole answer arrived. */
export class SocketExchangeError extends Error {
  override name = 'SocketExchangeError'
}

/** Most bytes one socket read may fill: megabyte answers arrive in a few reads. */
const READ_AT_MOST = 1024 * 1024
/** Room below which a body buffer grows before the next read. */
const READ_AT_LEAST = 64 * 1024
/** A status line and headers longer than this are not an HTTP answer we can use. */
const HEAD_AT_MOST = 64 * 1024
/** First buffer for a body of undeclared length; grown by doubling. */
const UNDECLARED_FIRST = 256 * 1024
/** An idle connection is closed after this long (undici's default keep-alive too): servers close theirs after a few seconds. */
const IDLE_MS = 4_000
/** Longest chunk-size line (with extensions) read. */
const CHUNK_LINE_AT_MOST = 4096

const HEAD_END = Buffer.from('\r\n\r\n', 'latin1')

type Target = { host: string; port: number; key: string; path: string; authorization: string | undefined }

const targets = new Map<string, Target>()

function targetOf(url: string): Target {
  let target = targets.get(url)
  if (target) return target
  const parsed = new URL(url)
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname
  const port = parsed.port ? Number(parsed.port) : 80
  const credentials = parsed.username || parsed.password ? `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}` : undefined
  target = {
    host,
    port,
    key: `${host}:${port}`,
    path: `${parsed.pathname || '/'}${parsed.search}`,
    authorization: credentials === undefined ? undefined : `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`,
  }
  if (targets.size > 1000) targets.clear()
  targets.set(url, target)
  return target
}

type Framing = { kind: 'length'; total: number } | { kind: 'chunked' } | { kind: 'close' }
type ChunkState = 'size' | 'data' | 'data-end' | 'trailer' | 'done'

/** One request and its answer on a connection. */
class Exchange {
  status = 0
  retryAfter: string | undefined
  framing: Framing | undefined
  keepAlive = true
  body: Buffer | undefined
  /** Bytes of the body buffer holding received data (for chunked: decoded data, then the undecoded tail). */
  received = 0
  decoded = 0
  chunkLeft = 0
  chunkState: ChunkState = 'size'
  settled = false

  constructor(
    readonly buffers: AnswerBuffers,
    readonly resolve: (answer: SocketAnswer) => void,
    readonly reject: (error: SocketExchangeError) => void,
  ) {}
}

/** A kept-alive connection to one host and port. */
class Connection {
  readonly socket: Socket
  exchange: Exchange | undefined
  private readonly head = Buffer.allocUnsafe(HEAD_AT_MOST)
  private headLength = 0
  private idleTimer: NodeJS.Timeout | undefined

  constructor(
    target: Target,
    private readonly onIdle: (connection: Connection) => void,
    private readonly onGone: (connection: Connection) => void,
  ) {
    this.socket = connect({
      host: target.host,
      port: target.port,
      onread: { buffer: () => this.readInto(), callback: (bytes: number) => this.onRead(bytes) },
    })
    this.socket.setNoDelay(true)
    this.socket.on('end', () => this.onEnd())
    this.socket.on('error', (error) => this.fail(error.message, error))
    this.socket.on('close', () => {
      this.fail('the connection closed before the whole answer arrived')
      clearTimeout(this.idleTimer)
      this.onGone(this)
    })
  }

  send(exchange: Exchange, request: string) {
    clearTimeout(this.idleTimer)
    this.socket.ref()
    this.exchange = exchange
    this.headLength = 0
    this.socket.write(request, 'utf8')
  }

  /** Where the next read lands: the head buffer until the head is read, then the body buffer. */
  private readInto(): Buffer {
    const exchange = this.exchange
    if (!exchange?.body) return this.head.subarray(this.headLength)
    const framing = exchange.framing!
    // a declared length is read exactly (a byte past it belongs to no request), in a buffer that holds it;
    // an undeclared one up to the most an answer may have (onRead fails it there)
    const left = Math.max(1, framing.kind === 'length' ? framing.total - exchange.received : exchange.buffers.mostBytes - exchange.received)
    const room = Math.min(left, READ_AT_LEAST)
    if (exchange.body.length - exchange.received < room) exchange.body = exchange.buffers.grow(exchange.body, exchange.received, exchange.received + room)
    return exchange.body.subarray(exchange.received, Math.min(exchange.body.length, exchange.received + Math.min(left, READ_AT_MOST)))
  }

  private onRead(bytes: number): boolean {
    const exchange = this.exchange
    if (!exchange || exchange.settled) {
      // bytes nobody asked for: this connection cannot be trusted with the next request
      this.socket.destroy()
      return false
    }
    try {
      if (!exchange.body) {
        this.headLength += bytes
        this.readHead(exchange)
      } else {
        exchange.received += bytes
        this.readBody(exchange)
      }
      // an answer not whole at the most one may have is not read further (a declared length over it was refused at the head)
      if (!exchange.settled && exchange.body && exchange.received >= exchange.buffers.mostBytes) throw new AnswerTooLargeError(exchange.buffers.mostBytes)
    } catch (error) {
      this.fail((error as Error).message, error as Error)
      return false
    }
    return true
  }

  /** Reads the head once whole (skipping 1xx heads), then moves what followed it into the body buffer. */
  private readHead(exchange: Exchange) {
    for (;;) {
      const end = this.head.subarray(0, this.headLength).indexOf(HEAD_END)
      if (end < 0) {
        if (this.headLength >= HEAD_AT_MOST) throw new Error(`the node's answer has no end of its head in ${HEAD_AT_MOST} bytes`)
        return
      }
      const headEnd = end + HEAD_END.length
      const informational = readHeadLines(this.head.toString('latin1', 0, end), exchange)
      this.head.copy(this.head, 0, headEnd, this.headLength)
      this.headLength -= headEnd
      if (!informational) break
    }
    const framing = exchange.framing!
    exchange.body =
      framing.kind === 'length' ? exchange.buffers.reserve(Math.max(framing.total, this.headLength)) : exchange.buffers.takeBuffer(Math.max(UNDECLARED_FIRST, this.headLength))
    this.head.copy(exchange.body, 0, 0, this.headLength)
    exchange.received = this.headLength
    this.headLength = 0
    this.readBody(exchange)
  }

  private readBody(exchange: Exchange) {
    const framing = exchange.framing!
    // bytes past the answer belong to no request: the answer stands, the connection is not used again
    if (framing.kind === 'length') {
      if (exchange.received > framing.total) exchange.keepAlive = false
      if (exchange.received >= framing.total) this.complete(exchange, framing.total)
    } else if (framing.kind === 'chunked') {
      dechunk(exchange)
      if (exchange.chunkState === 'done') {
        if (exchange.received > exchange.decoded) exchange.keepAlive = false
        this.complete(exchange, exchange.decoded)
      }
    }
  }

  private onEnd() {
    const exchange = this.exchange
    if (exchange && !exchange.settled && exchange.framing?.kind === 'close' && exchange.body) {
      exchange.keepAlive = false
      this.complete(exchange, exchange.received)
    }
    // the server will send nothing more: the 'close' that follows fails whatever is still waiting
    this.socket.end()
  }

  private complete(exchange: Exchange, length: number) {
    exchange.settled = true
    this.exchange = undefined
    exchange.resolve({ status: exchange.status, buffer: exchange.body!, length, retryAfter: exchange.retryAfter })
    if (!exchange.keepAlive) {
      this.socket.destroy()
      return
    }
    this.socket.unref()
    this.idleTimer = setTimeout(() => this.socket.destroy(), IDLE_MS).unref()
    this.onIdle(this)
  }

  /** Fails the exchange in progress (once) and closes the connection. */
  fail(message: string, cause?: Error) {
    const exchange = this.exchange
    this.socket.destroy()
    if (!exchange || exchange.settled) return
    exchange.settled = true
    this.exchange = undefined
    if (exchange.body) exchange.buffers.giveBack(exchange.body)
    exchange.reject(new SocketExchangeError(message, { cause }))
  }
}

/** Reads a status line and headers into the exchange; true for an informational (1xx) head, which another follows. */
function readHeadLines(head: string, exchange: Exchange): boolean {
  const lines = head.split('\r\n')
  const statusLine = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(lines[0]!)
  if (!statusLine) throw new Error(`the node's answer is not HTTP/1.x: ${JSON.stringify(lines[0]!.slice(0, 80))}`)
  const status = Number(statusLine[2])
  if (status >= 100 && status < 200) return true
  exchange.status = status
  exchange.keepAlive = statusLine[1] === '1'
  let length: number | undefined
  let chunked = false
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!
    const colon = line.indexOf(':')
    if (colon <= 0) throw new Error(`the node's answer has a malformed header line: ${JSON.stringify(line.slice(0, 80))}`)
    const name = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    if (name === 'content-length') {
      if (!/^\d+$/.test(value) || (length !== undefined && length !== Number(value))) throw new Error(`the node's answer has an invalid Content-Length: ${value}`)
      length = Number(value)
    } else if (name === 'transfer-encoding') {
      chunked = value.toLowerCase().split(',').at(-1)!.trim() === 'chunked'
      if (!chunked) throw new Error(`the node's answer has a transfer encoding this client does not read: ${value}`)
    } else if (name === 'connection') {
      const tokens = value.toLowerCase().split(',').map((token) => token.trim())
      if (tokens.includes('close')) exchange.keepAlive = false
      else if (tokens.includes('keep-alive')) exchange.keepAlive = true
    } else if (name === 'retry-after') exchange.retryAfter = value
  }
  if (status === 204 || status === 304) exchange.framing = { kind: 'length', total: 0 }
  else if (chunked) exchange.framing = { kind: 'chunked' }
  else if (length !== undefined) exchange.framing = { kind: 'length', total: length }
  else {
    exchange.framing = { kind: 'close' }
    exchange.keepAlive = false
  }
  return false
}

/**
 * Decodes the chunked body received so far in place: chunk data moves down
 * over the chunk-size lines before it, so `body[0, decoded)` is the answer
 * so far and `body[decoded, received)` the few bytes of a line not yet whole.
 */
function dechunk(exchange: Exchange) {
  const body = exchange.body!
  let at = exchange.decoded
  const end = exchange.received
  while (exchange.chunkState !== 'done') {
    if (exchange.chunkState === 'data') {
      const bytes = Math.min(exchange.chunkLeft, end - at)
      if (bytes === 0) break
      if (at !== exchange.decoded) body.copy(body, exchange.decoded, at, at + bytes)
      exchange.decoded += bytes
      at += bytes
      exchange.chunkLeft -= bytes
      if (exchange.chunkLeft === 0) exchange.chunkState = 'data-end'
      continue
    }
    if (exchange.chunkState === 'data-end') {
      if (end - at < 2) break
      if (body[at] !== 13 || body[at + 1] !== 10) throw new Error('the node sent a chunk longer than its size line says')
      at += 2
      exchange.chunkState = 'size'
      continue
    }
    const lineEnd = lineEndIn(body, at, end)
    if (lineEnd < 0) {
      if (end - at > CHUNK_LINE_AT_MOST) throw new Error('the node sent a chunk-size line without an end')
      break
    }
    const lineStart = at
    at = lineEnd + 2
    if (exchange.chunkState === 'trailer') {
      // trailers are read past; an empty line ends the answer
      if (lineEnd === lineStart) exchange.chunkState = 'done'
      continue
    }
    const size = chunkSize(body, lineStart, lineEnd)
    if (size < 0) throw new Error(`the node sent an invalid chunk size: ${JSON.stringify(body.toString('latin1', lineStart, Math.min(lineEnd, lineStart + 40)))}`)
    exchange.chunkLeft = size
    exchange.chunkState = size === 0 ? 'trailer' : 'data'
  }
  // the undecoded tail (part of a line) moves down next to the decoded data, so the buffer holds about the answer's size
  if (at !== exchange.decoded) body.copy(body, exchange.decoded, at, end)
  exchange.received = exchange.decoded + (end - at)
}

/** Where the CRLF ending the line at `from` starts, or -1 when it has not arrived by `end`. Read byte by byte: lines are short, and a node may send a million of them. */
function lineEndIn(body: Buffer, from: number, end: number): number {
  for (let i = from; i < end - 1; i++) if (body[i] === 13 && body[i + 1] === 10) return i
  return -1
}

/** Whitespace as String.prototype.trim sees it among Latin-1 bytes. */
const isBlank = (byte: number | undefined) => byte === 32 || (byte !== undefined && byte >= 9 && byte <= 13) || byte === 160

/** The chunk size of the line `body[from, to)`: 1 to 8 hex digits, blanks around them, extensions after a `;`; -1 when it is not one. */
function chunkSize(body: Buffer, from: number, to: number): number {
  let at = from
  while (at < to && isBlank(body[at])) at++
  let size = 0
  let digits = 0
  for (; at < to; at++, digits++) {
    const byte = body[at]!
    const value = byte >= 48 && byte <= 57 ? byte - 48 : byte >= 97 && byte <= 102 ? byte - 87 : byte >= 65 && byte <= 70 ? byte - 55 : -1
    if (value < 0) break
    size = size * 16 + value
  }
  while (at < to && isBlank(body[at])) at++
  return digits >= 1 && digits <= 8 && (at === to || body[at] === 59) ? size : -1
}

/** Idle connections by host and port, the most recently used last. */
const idle = new Map<string, Connection[]>()

function takeConnection(target: Target): Connection {
  const list = idle.get(target.key)
  while (list?.length) {
    const connection = list.pop()!
    if (!connection.socket.destroyed) return connection
  }
  return new Connection(
    target,
    (connection) => {
      const waiting = idle.get(target.key) ?? []
      waiting.push(connection)
      idle.set(target.key, waiting)
    },
    (connection) => {
      const waiting = idle.get(target.key)
      const at = waiting?.indexOf(connection) ?? -1
      if (at >= 0) waiting!.splice(at, 1)
    },
  )
}

function requestOf(target: Target, body: string): string {
  return (
    `POST ${target.path} HTTP/1.1\r\nHost: ${target.key}\r\nContent-Type: application/json\r\nAccept: application/json\r\n` +
    (target.authorization ? `Authorization: ${target.authorization}\r\n` : '') +
    `Content-Length: ${Buffer.byteLength(body, 'utf8')}\r\n\r\n${body}`
  )
}

/**
 * POSTs `body` to an http URL and reads the whole answer into a buffer of
 * `buffers` (the caller gives it back). `signal` aborts it. A failed
 * exchange is not sent again here: whether to, and how, is the transport's
 * call (a node that drops big batches must see each one once).
 */
export function postOverSocket(url: string, body: string, buffers: AnswerBuffers, signal: AbortSignal): Promise<SocketAnswer> {
  const target = targetOf(url)
  return exchangeOn(takeConnection(target), requestOf(target, body), buffers, signal)
}

function exchangeOn(connection: Connection, request: string, buffers: AnswerBuffers, signal: AbortSignal): Promise<SocketAnswer> {
  return new Promise<SocketAnswer>((resolve, reject) => {
    if (signal.aborted) return reject(new SocketExchangeError('aborted'))
    const onAbort = () => connection.fail('aborted')
    signal.addEventListener('abort', onAbort, { once: true })
    const done = () => signal.removeEventListener('abort', onAbort)
    const exchange = new Exchange(
      buffers,
      (answer) => {
        done()
        resolve(answer)
      },
      (error) => {
        done()
        reject(error)
      },
    )
    connection.send(exchange, request)
  })
}
