import { connect, type Socket } from 'node:net'
import { AnswerTooLargeError, type AnswerBuffers } from './answer-buffers.js'
import { dechunk, type ChunkedBody, type ChunkState } from './chunked.js'
import { readAnswerHead, type Framing } from './http-head.js'

/**
 * One kept-alive connection of the socket reader (http-socket.ts) and the
 * exchange under way on it: socket reads (`onread`) land in the answer's
 * pool buffer itself, the head in a buffer of its own until it is whole.
 * A connection that misbehaves (bytes while idle or past its answer, a
 * malformed head or chunk) is closed, never reused.
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

const HEAD_END = Buffer.from('\r\n\r\n', 'latin1')

/** One request and its answer on a connection. */
export class Exchange implements ChunkedBody {
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
export class Connection {
  readonly socket: Socket
  exchange: Exchange | undefined
  private readonly head = Buffer.allocUnsafe(HEAD_AT_MOST)
  private headLength = 0
  private idleTimer: NodeJS.Timeout | undefined

  constructor(
    target: { host: string; port: number },
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
      const head = readAnswerHead(this.head.toString('latin1', 0, end))
      this.head.copy(this.head, 0, headEnd, this.headLength)
      this.headLength -= headEnd
      if (!head) continue
      exchange.status = head.status
      exchange.keepAlive = head.keepAlive
      exchange.retryAfter = head.retryAfter
      exchange.framing = head.framing
      break
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
