import type { Server as HttpServer } from 'node:http'
import type { Socket } from 'node:net'
import { STATUS_CODES } from 'node:http'
import { errorBody } from '../contract/error-body.js'
import { clientKey, type TrustProxy } from './client.js'

/**
 * Things a client holds open — connections, streams — counted per client in
 * this process. They live and die with a socket of this process, so the count
 * does too: a shared counter (Redis) would outlive a crashed process and
 * lock its clients out. Behind a load balancer with N API processes a client
 * can hold N times the limit, which is N times bounded.
 */
export function createClientSlots(max: number) {
  const held = new Map<string, number>()

  /** A slot for `client`, or undefined when it holds `max` already. The release runs once, however often it is called. */
  function tryAcquire(client: string): (() => void) | undefined {
    const count = held.get(client) ?? 0
    if (count >= max) return undefined
    held.set(client, count + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      const left = (held.get(client) ?? 1) - 1
      if (left <= 0) held.delete(client)
      else held.set(client, left)
    }
  }

  return { tryAcquire, heldBy: (client: string) => held.get(client) ?? 0, clients: () => held.size }
}

export type ClientSlots = ReturnType<typeof createClientSlots>

/** How long a refused connection is left to read its 429 before it is destroyed. */
const REFUSED_LINGER_MS = 2_000

/**
 * Caps the connections one client holds open at once. Over the cap, the new
 * connection is answered 429 before it sends anything (the shared error
 * body, `Connection: close`) and closed; a request that still arrives on it is
 * dropped without being routed, so a refused connection costs no handler.
 *
 * The client is the socket's address, IPv6 per /64 (`clientKey`). A trusted
 * proxy's socket (TRUST_PROXY) is exempt: it carries many clients, which the
 * per-request limits tell apart by their forwarded address.
 */
export function limitConnectionsPerClient(server: HttpServer, options: { max: number; trustProxy: TrustProxy; onRefused: () => void }) {
  const slots = createClientSlots(options.max)
  // a request that still arrives on a refused socket is dropped unanswered
  const refusedSockets = new WeakSet<Socket>()
  const body = JSON.stringify(errorBody('rate_limited', `connection: more than ${options.max} open connections from this client; close some and retry`))
  const answer =
    `HTTP/1.1 429 ${STATUS_CODES[429]}\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: 1\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`

  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress
    if (!address || options.trustProxy(address, 0)) return
    const release = slots.tryAcquire(clientKey(address))
    if (release) {
      socket.once('close', release)
      return
    }
    options.onRefused()
    refusedSockets.add(socket)
    socket.end(answer)
    setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref()
  })
  return {
    heldBy: slots.heldBy,
    /** True for a socket the cap refused: its requests are not served. */
    isRefused: (socket: Socket | undefined) => socket !== undefined && refusedSockets.has(socket),
  }
}

export type ConnectionCap = ReturnType<typeof limitConnectionsPerClient>
