import type { AnswerBuffers } from './answer-buffers.js'
import { Connection, Exchange, SocketExchangeError, type SocketAnswer } from './socket-connection.js'

export { SocketExchangeError, type SocketAnswer }

/**
 * POST over plain HTTP/1.1 with the answer read straight into a pool buffer.
 *
 * A backfill reads gigabytes of answers. An HTTP client hands them over as
 * chunks of fresh memory that are then copied into the pool buffer: the
 * copy, the allocations and their collection were a fifth of the indexer's
 * main thread on the everyday bench chain (BENCHMARKS.md). Here the socket
 * reads land in the pool buffer itself (socket-connection.ts), so the
 * kernel's copy is the only one; a chunked answer is compacted in place as
 * it arrives (chunked.ts).
 *
 * What it speaks: one request at a time per connection, kept alive and
 * reused; answers framed by Content-Length, chunked transfer coding alone,
 * or the connection's end; informational (1xx) heads skipped; any other
 * transfer coding refused at the head (http-head.ts). No TLS (an https URL
 * goes through undici: http-post.ts), no compression (none is asked for),
 * no redirects, no proxy.
 *
 * The connections belong to the client that opened them (one per
 * transport): at most `maxConnectionsPerHost` to one host and port, a
 * request past them waiting for one to come back.
 */

type Target = { host: string; port: number; key: string; hostHeader: string; path: string; authorization: string | undefined }

/** Connections to one host and port: the idle ones (most recently used last), how many are open, the requests waiting for one. */
type HostConnections = { idle: Connection[]; open: number; waiting: Array<(connection: Connection) => void> }

/** Parsed targets kept per client, up to this many URLs (a client talks to one node; a test to a few). */
const TARGETS_KEPT = 64

export type SocketClientOptions = {
  /** Most connections open to one host and port at once (default 16); a transport gives its most requests in flight. */
  maxConnectionsPerHost?: number
}

export function createSocketClient(options: SocketClientOptions = {}) {
  const cap = Math.max(1, options.maxConnectionsPerHost ?? 16)
  const targets = new Map<string, Target>()
  const hosts = new Map<string, HostConnections>()

  function targetOf(url: string): Target {
    let target = targets.get(url)
    if (target) return target
    target = parseTarget(url)
    if (targets.size >= TARGETS_KEPT) targets.clear()
    targets.set(url, target)
    return target
  }

  function hostOf(target: Target): HostConnections {
    let host = hosts.get(target.key)
    if (!host) hosts.set(target.key, (host = { idle: [], open: 0, waiting: [] }))
    return host
  }

  function open(target: Target, host: HostConnections): Connection {
    host.open++
    return new Connection(
      target,
      (connection) => {
        const next = host.waiting.shift()
        if (next) next(connection)
        else host.idle.push(connection)
      },
      (connection) => {
        host.open--
        const at = host.idle.indexOf(connection)
        if (at >= 0) host.idle.splice(at, 1)
        // a connection gone frees its place: the first request waiting gets a new one
        const next = host.waiting.shift()
        if (next) next(open(target, host))
        else if (host.open === 0 && host.idle.length === 0) hosts.delete(target.key)
      },
    )
  }

  /** An idle connection, a new one while under the cap, else the next one to come back. */
  function connectionFor(target: Target, signal: AbortSignal): Promise<Connection> {
    const host = hostOf(target)
    while (host.idle.length > 0) {
      const connection = host.idle.pop()!
      if (!connection.socket.destroyed) return Promise.resolve(connection)
    }
    if (host.open < cap) return Promise.resolve(open(target, host))
    return new Promise<Connection>((resolve, reject) => {
      const onAbort = () => {
        const at = host.waiting.indexOf(take)
        if (at >= 0) host.waiting.splice(at, 1)
        reject(new SocketExchangeError('aborted while waiting for a connection'))
      }
      const take = (connection: Connection) => {
        signal.removeEventListener('abort', onAbort)
        resolve(connection)
      }
      signal.addEventListener('abort', onAbort, { once: true })
      host.waiting.push(take)
    })
  }

  return {
    /**
     * POSTs `body` to an http URL and reads the whole answer into a buffer of
     * `buffers` (the caller gives it back). `signal` aborts it. A failed
     * exchange is not sent again here: whether to, and how, is the transport's
     * call (a node that drops big batches must see each one once).
     */
    async post(url: string, body: string, buffers: AnswerBuffers, signal: AbortSignal): Promise<SocketAnswer> {
      if (signal.aborted) throw new SocketExchangeError('aborted')
      const target = targetOf(url)
      const connection = await connectionFor(target, signal)
      return exchangeOn(connection, requestOf(target, body), buffers, signal)
    },
    /** Connections open to the host and port of `url` (idle or busy). */
    openTo(url: string): number {
      return hosts.get(targetOf(url).key)?.open ?? 0
    },
    /** Closes the idle connections (busy ones close when their answer is in). */
    close() {
      for (const host of hosts.values()) for (const connection of host.idle.splice(0)) connection.socket.destroy()
    },
  }
}

export type SocketClient = ReturnType<typeof createSocketClient>

/** Where a URL's requests go, and the head they carry. An IPv6 host keeps its brackets in the Host header (`[::1]:8545`). */
function parseTarget(url: string): Target {
  const parsed = new URL(url)
  const bracketed = parsed.hostname.startsWith('[')
  const host = bracketed ? parsed.hostname.slice(1, -1) : parsed.hostname
  const port = parsed.port ? Number(parsed.port) : 80
  const credentials = parsed.username || parsed.password ? `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}` : undefined
  return {
    host,
    port,
    key: `${parsed.hostname}:${port}`,
    hostHeader: `${parsed.hostname}:${port}`,
    path: `${parsed.pathname || '/'}${parsed.search}`,
    authorization: credentials === undefined ? undefined : `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`,
  }
}

function requestOf(target: Target, body: string): string {
  return (
    `POST ${target.path} HTTP/1.1\r\nHost: ${target.hostHeader}\r\nContent-Type: application/json\r\nAccept: application/json\r\n` +
    (target.authorization ? `Authorization: ${target.authorization}\r\n` : '') +
    `Content-Length: ${Buffer.byteLength(body, 'utf8')}\r\n\r\n${body}`
  )
}

function exchangeOn(connection: Connection, request: string, buffers: AnswerBuffers, signal: AbortSignal): Promise<SocketAnswer> {
  return new Promise<SocketAnswer>((resolve, reject) => {
    if (signal.aborted) {
      // the connection was handed over but no request went on it: it goes back as it came
      connection.fail('aborted')
      return reject(new SocketExchangeError('aborted'))
    }
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
