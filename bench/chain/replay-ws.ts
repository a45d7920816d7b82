import { createHash } from 'node:crypto'
import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Result } from './replay-methods.js'
import type { ReleaseState } from './replay-server.js'

/**
 * The replay node's WebSocket side, as a node with `WS_URL` serves it: JSON-RPC
 * over the socket, and `eth_subscribe("newHeads")` pushing each block's header
 * the moment the release schedule makes it the head (replay-server.ts), so a
 * live bench can measure an indexer woken by pushed heads instead of polling.
 *
 * A minimal RFC 6455 server on the HTTP server's `upgrade` event (text frames,
 * ping, close; no extensions, no fragmented messages from the client), so the
 * bench needs no WebSocket package of its own.
 */
export type NewHeadsSource = {
  head(): number
  release(): ReleaseState
  /** The header object of block `number` (eth_getBlockByNumber(n, false)), as JSON. */
  header(number: number): Result
  /** Any other JSON-RPC call on the socket; throws an error with `code` for an unknown method. */
  call(method: string, params: unknown[]): Result
}

const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

type Socket = { socket: Duplex; subscriptions: Set<string> }

/** One server frame (unmasked): `opcode` 1 text, 8 close, 10 pong. */
function frame(opcode: number, payload: Buffer): Buffer {
  const length = payload.length
  const head = length < 126 ? Buffer.from([0x80 | opcode, length]) : length < 65_536 ? Buffer.alloc(4) : Buffer.alloc(10)
  if (length >= 126 && length < 65_536) {
    head[0] = 0x80 | opcode
    head[1] = 126
    head.writeUInt16BE(length, 2)
  } else if (length >= 65_536) {
    head[0] = 0x80 | opcode
    head[1] = 127
    head.writeBigUInt64BE(BigInt(length), 2)
  }
  return Buffer.concat([head, payload])
}

/** Complete client frames at the start of `buffer` (masked, as RFC 6455 requires) and the bytes left over. */
function readFrames(buffer: Buffer): { frames: Array<{ opcode: number; payload: Buffer }>; rest: Buffer } {
  const frames: Array<{ opcode: number; payload: Buffer }> = []
  let at = 0
  for (;;) {
    if (buffer.length - at < 2) break
    const opcode = buffer[at]! & 0x0f
    const masked = (buffer[at + 1]! & 0x80) !== 0
    let length = buffer[at + 1]! & 0x7f
    let offset = at + 2
    if (length === 126) {
      if (buffer.length < offset + 2) break
      length = buffer.readUInt16BE(offset)
      offset += 2
    } else if (length === 127) {
      if (buffer.length < offset + 8) break
      length = Number(buffer.readBigUInt64BE(offset))
      offset += 8
    }
    const maskAt = offset
    if (masked) offset += 4
    if (buffer.length < offset + length) break
    const payload = Buffer.from(buffer.subarray(offset, offset + length))
    if (masked) for (let i = 0; i < payload.length; i++) payload[i]! ^= buffer[maskAt + (i % 4)]!
    frames.push({ opcode, payload })
    at = offset + length
  }
  return { frames, rest: buffer.subarray(at) }
}

/** When block `number` becomes the head under `release` (epoch ms), or undefined if it never does by time alone. */
export function releaseTimeOf(release: ReleaseState, number: number): number | undefined {
  if (number <= release.baseHead) return release.baseAt
  if (release.rate <= 0) return undefined
  return release.baseAt + ((number - release.baseHead) * 1000) / release.rate
}

export function attachNewHeadsPush(server: Server, source: NewHeadsSource) {
  const sockets = new Set<Socket>()
  let pushedThrough = source.head()
  let timer: NodeJS.Timeout | undefined
  let nextSubscription = 1

  const send = (socket: Socket, text: string | Buffer) => {
    if (!socket.socket.destroyed) socket.socket.write(frame(1, typeof text === 'string' ? Buffer.from(text) : text))
  }

  function pushHeads() {
    timer = undefined
    const head = source.head()
    for (let number = pushedThrough + 1; number <= head; number++) {
      const header = source.header(number)
      for (const socket of sockets) {
        for (const id of socket.subscriptions) {
          send(socket, Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${id}","result":`), Buffer.from(header), Buffer.from('}}')]))
        }
      }
    }
    pushedThrough = Math.max(pushedThrough, head)
    schedule()
  }

  /** A timer for the next block's release moment (re-checked when it fires: a timer may fire a little early). */
  function schedule() {
    clearTimeout(timer)
    timer = undefined
    if (sockets.size === 0) return
    const at = releaseTimeOf(source.release(), pushedThrough + 1)
    if (at === undefined) return
    timer = setTimeout(pushHeads, Math.max(0, Math.ceil(at - Date.now())))
  }

  function handleMessage(socket: Socket, text: string) {
    let request: { id?: unknown; method?: unknown; params?: unknown }
    try {
      request = JSON.parse(text) as typeof request
    } catch {
      return send(socket, '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}')
    }
    const id = request.id === undefined ? 'null' : JSON.stringify(request.id)
    const params = Array.isArray(request.params) ? request.params : []
    if (request.method === 'eth_subscribe' && params[0] === 'newHeads') {
      const subscription = `0x${(nextSubscription++).toString(16)}`
      socket.subscriptions.add(subscription)
      send(socket, `{"jsonrpc":"2.0","id":${id},"result":"${subscription}"}`)
      // heads from now on: what is already out was there before the subscription
      pushedThrough = Math.max(pushedThrough, source.head())
      return schedule()
    }
    if (request.method === 'eth_unsubscribe') {
      const removed = socket.subscriptions.delete(String(params[0]))
      return send(socket, `{"jsonrpc":"2.0","id":${id},"result":${removed}}`)
    }
    try {
      const result = source.call(String(request.method), params)
      send(socket, Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":${id},"result":`), Buffer.from(result), Buffer.from('}')]))
    } catch (error) {
      const code = (error as { code?: number }).code ?? -32603
      send(socket, `{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify({ code, message: (error as Error).message })}}`)
    }
  }

  server.on('upgrade', (request: IncomingMessage, duplex: Duplex) => {
    const key = request.headers['sec-websocket-key']
    if (typeof key !== 'string' || request.headers.upgrade?.toLowerCase() !== 'websocket') return void duplex.destroy()
    const accept = createHash('sha1').update(key + WEBSOCKET_GUID).digest('base64')
    duplex.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`)
    const socket: Socket = { socket: duplex, subscriptions: new Set() }
    sockets.add(socket)
    let pending = Buffer.alloc(0)
    duplex.on('data', (chunk: Buffer) => {
      const { frames, rest } = readFrames(pending.length === 0 ? chunk : Buffer.concat([pending, chunk]))
      pending = Buffer.from(rest)
      for (const { opcode, payload } of frames) {
        if (opcode === 1) handleMessage(socket, payload.toString('utf8'))
        else if (opcode === 9) duplex.write(frame(10, payload))
        else if (opcode === 8) {
          duplex.end(frame(8, payload.subarray(0, 2)))
          sockets.delete(socket)
        }
      }
    })
    const forget = () => {
      sockets.delete(socket)
      if (sockets.size === 0) schedule()
    }
    duplex.on('close', forget)
    duplex.on('error', forget)
  })

  return {
    /** The release schedule changed: push from the new head on. */
    rescheduled() {
      pushedThrough = Math.min(pushedThrough, source.head())
      schedule()
    },
    close() {
      clearTimeout(timer)
      for (const { socket } of sockets) socket.destroy()
      sockets.clear()
    },
  }
}
