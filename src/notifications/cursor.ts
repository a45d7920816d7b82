import { createHmac, timingSafeEqual } from 'node:crypto'
import { InvalidCursorError } from '../contract/cursor-error.js'

const FORMAT_VERSION = 1
const POSITION_BYTES = 8
const MAC_BYTES = 16
const CURSOR_BYTES = 1 + POSITION_BYTES + MAC_BYTES

/**
 * Opaque keyset-pagination cursors: base64url of (version, position, MAC).
 * The position is the last row's monotonic id; the MAC (HMAC-SHA256 with
 * CURSOR_SECRET, truncated to 128 bits) covers the position and the
 * listing's scope, so an edited cursor, or one taken from another app's or
 * wallet's listing, is rejected instead of silently paging somewhere else.
 */
export function createCursorCodec(secret: string) {
  function mac(scope: string, body: Buffer): Buffer {
    return createHmac('sha256', secret).update(scope).update('\0').update(body).digest().subarray(0, MAC_BYTES)
  }

  function encode(scope: string, position: number): string {
    const body = Buffer.alloc(1 + POSITION_BYTES)
    body.writeUInt8(FORMAT_VERSION, 0)
    body.writeBigUInt64BE(BigInt(position), 1)
    return Buffer.concat([body, mac(scope, body)]).toString('base64url')
  }

  /** The position encoded in `cursor`, or InvalidCursorError. */
  function decode(scope: string, cursor: string): number {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new InvalidCursorError()
    const bytes = Buffer.from(cursor, 'base64url')
    // base64url has spare bits in its last character: only the canonical spelling is accepted
    if (bytes.toString('base64url') !== cursor) throw new InvalidCursorError()
    if (bytes.length !== CURSOR_BYTES || bytes.readUInt8(0) !== FORMAT_VERSION) throw new InvalidCursorError()
    const body = bytes.subarray(0, 1 + POSITION_BYTES)
    if (!timingSafeEqual(bytes.subarray(1 + POSITION_BYTES), mac(scope, body))) throw new InvalidCursorError()
    const position = body.readBigUInt64BE(1)
    if (position > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidCursorError()
    return Number(position)
  }

  return { encode, decode }
}

export type CursorCodec = ReturnType<typeof createCursorCodec>
