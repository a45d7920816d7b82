import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** Recognizable prefix so secret scanners and humans can tell what leaked. */
const API_KEY_PREFIX = 'ank_'

/** A new API key: 256 random bits, base64url. Shown once; only its hash is stored. */
export function generateApiKey(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`
}

/**
 * SHA-256 of a secret, hex. Keys carry 256 random bits, so a fast hash is
 * enough (no password-style stretching needed) and keeps lookup by hash cheap.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex')
}

/** Compares two hex digests without leaking where they first differ. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex')
  const right = Buffer.from(b, 'hex')
  return left.length === right.length && timingSafeEqual(left, right)
}

/**
 * True when an `Authorization: Bearer <token>` header carries `expected`.
 * Both sides are hashed first so the comparison is constant-time whatever
 * the lengths.
 */
export function bearerTokenMatches(header: string | undefined, expected: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  if (!match) return false
  return digestsEqual(hashSecret(match[1]!), hashSecret(expected))
}
