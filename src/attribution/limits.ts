import { createHash } from 'node:crypto'

/**
 * What one transaction may cost the index, whatever its calldata says.
 * Calldata is written by anyone: without these bounds one long code made
 * a commit fail on its btree key (the range stuck for good), and one
 * transaction with thousands of codes cost megabytes and seconds.
 *
 * No honest suffix reaches them. ERC-8021 schemas 0 and 1 carry at most 255
 * bytes of codes in all (a one-byte length); a registry code is 1 to 32
 * characters. Only schema 2 (CBOR, a two-byte length) can say more.
 */
export const ATTRIBUTION_LIMITS = Object.freeze({
  /** A code longer than this (UTF-8 bytes) is kept as an invalid code in its bounded form (boundedCode). */
  maxCodeBytes: 64,
  /** The bounded form keeps this many leading bytes of the code… */
  boundedCodePrefixBytes: 40,
  /** …then '…' and this many hex characters of the code's SHA-256, so two long codes stay two codes. */
  boundedCodeHashChars: 16,
  /** A suffix longer than this (bytes, marker included) is malformed: CBOR is not even decoded. */
  maxSuffixBytes: 4096,
  /** A suffix naming more codes than this is malformed. */
  maxSuffixCodes: 32,
  /** A bundle's UserOperations past this many suffixes (attributed or malformed) are not read: the bundle stops with a reason. */
  maxBundleSuffixes: 256,
  /** …nor past this many codes in all of its attributed UserOperations. */
  maxBundleCodes: 1024,
  /** A malformed reason is cut to this many characters (a CBOR error may quote the input). */
  maxReasonChars: 200,
})

/**
 * A code as it is stored: itself when short enough, else its first
 * `boundedCodePrefixBytes` bytes (whole characters only), '…' and 16 hex
 * characters of its SHA-256. The bounded form fails the registry rule (it
 * holds '…'), so the code counts as invalid under a name that is still
 * distinct and stable from one run to the next.
 */
export function boundedCode(code: string): string {
  // fast path: a string of n UTF-16 units has at most 3n UTF-8 bytes
  if (code.length * 3 <= ATTRIBUTION_LIMITS.maxCodeBytes) return code
  const bytes = Buffer.from(code, 'utf8')
  if (bytes.length <= ATTRIBUTION_LIMITS.maxCodeBytes) return code
  const digest = createHash('sha256').update(bytes).digest('hex').slice(0, ATTRIBUTION_LIMITS.boundedCodeHashChars)
  return `${leadingCharacters(code, ATTRIBUTION_LIMITS.boundedCodePrefixBytes)}…${digest}`
}

/** The longest prefix of `text` (whole code points) that fits `maxBytes` UTF-8 bytes. */
function leadingCharacters(text: string, maxBytes: number): string {
  let bytes = 0
  let end = 0
  for (const char of text) {
    const size = Buffer.byteLength(char, 'utf8')
    if (bytes + size > maxBytes) break
    bytes += size
    end += char.length
  }
  return text.slice(0, end)
}

/** A reason as it is stored and served: at most `maxReasonChars` characters. */
export function boundedReason(reason: string): string {
  const max = ATTRIBUTION_LIMITS.maxReasonChars
  return reason.length <= max ? reason : `${reason.slice(0, max - 1)}…`
}
