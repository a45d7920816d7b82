// ox's own modules, not the ox and viem indexes: `attribution decode` then loads a few files, not hundreds
import * as Cbor from 'ox/Cbor'
import * as OxAddress from 'ox/Address'
import type { Address, Hex } from 'viem'
import { isValidCode } from './codes.js'
import { calldataGas } from './gas.js'
import { hasMarker, MARKER_BYTES } from './marker.js'
import { detached } from './detached.js'
import { ATTRIBUTION_LIMITS, boundedCode, boundedReason } from './limits.js'

export type SchemaId = 0 | 1 | 2

/** Where a code came from inside the suffix. Schema 0/1 codes are plain `code`s. */
export type CodeRole = 'code' | 'app' | 'wallet' | 'service'

export type AttributedCode = { code: string; role: CodeRole; valid: boolean }

export type CodeRegistry = { chainId: number; address: Address }

export type Attributed = {
  kind: 'attributed'
  schemaId: SchemaId
  /** Every distinct code the suffix attributes, in suffix order. */
  codes: string[]
  entries: AttributedCode[]
  /** Schema 1: the custom registry of all codes. */
  codeRegistry?: CodeRegistry
  /** Schema 2: custom registries of the app and wallet codes. */
  registries?: { app?: CodeRegistry; wallet?: CodeRegistry }
  metadata?: Record<string, unknown>
  suffix: Hex
  suffixBytes: number
  suffixGas: number
}

export type Malformed = { kind: 'malformed'; reason: string; schemaId?: number }
export type NotAttributed = { kind: 'none' }
export type DecodeResult = Attributed | Malformed | NotAttributed

const NONE: NotAttributed = { kind: 'none' }

function hexDigit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48
  if (code >= 97 && code <= 102) return code - 87
  if (code >= 65 && code <= 70) return code - 55
  return -1
}

/** Byte `index` (0-based, from the start of the data) of 0x-prefixed hex, or -1 when not hex. */
function byteAt(hex: string, index: number): number {
  const high = hexDigit(hex.charCodeAt(2 + 2 * index))
  const low = hexDigit(hex.charCodeAt(3 + 2 * index))
  return high < 0 || low < 0 ? -1 : high * 16 + low
}

/**
 * Checks that every character from `from` on is a hex digit (only the
 * suffix is checked, never the whole calldata). Returns -1 when one is not,
 * 1 when some are upper case, 0 otherwise.
 */
function scanHex(hex: string, from: number): -1 | 0 | 1 {
  let upper: 0 | 1 = 0
  for (let i = from; i < hex.length; i++) {
    const code = hex.charCodeAt(i)
    if (code >= 65 && code <= 70) upper = 1
    else if (hexDigit(code) < 0) return -1
  }
  return upper
}

function malformed(text: string, schemaId?: number): Malformed {
  const reason = boundedReason(text)
  return schemaId === undefined ? { kind: 'malformed', reason } : { kind: 'malformed', reason, schemaId }
}

/**
 * Byte offset where the suffix starts, or a Malformed explaining why the
 * length fields cannot be trusted. Bounds are checked before anything is
 * read, because a length byte pointing before the start of the calldata is
 * the commonest corruption.
 */
function locateSuffix(hex: string, size: number, schemaId: number): number | Malformed {
  const schemaIdIndex = size - MARKER_BYTES - 1
  if (schemaId === 0 || schemaId === 1) {
    const lengthIndex = schemaIdIndex - 1
    if (lengthIndex < 0) return malformed('calldata ends before the codes length byte', schemaId)
    const codesLength = byteAt(hex, lengthIndex)
    if (codesLength < 0) return malformed('calldata is not hex', schemaId)
    const codesStart = lengthIndex - codesLength
    if (codesStart < 0) return malformed('codes length reaches before the start of calldata', schemaId)
    if (codesLength === 0) return malformed('suffix carries no codes', schemaId)
    if (schemaId === 0) return codesStart
    const chainIdLengthIndex = codesStart - 1
    if (chainIdLengthIndex < 0) return malformed('calldata ends before the registry chain id length', schemaId)
    const chainIdLength = byteAt(hex, chainIdLengthIndex)
    if (chainIdLength < 0) return malformed('calldata is not hex', schemaId)
    if (chainIdLength === 0) return malformed('registry chain id is empty', schemaId)
    const registryStart = chainIdLengthIndex - chainIdLength - 20
    if (registryStart < 0) return malformed('registry reaches before the start of calldata', schemaId)
    return registryStart
  }
  if (schemaId === 2) {
    const lengthIndex = schemaIdIndex - 2
    if (lengthIndex < 0) return malformed('calldata ends before the CBOR length', schemaId)
    const high = byteAt(hex, lengthIndex)
    const low = byteAt(hex, lengthIndex + 1)
    if (high < 0 || low < 0) return malformed('calldata is not hex', schemaId)
    const cborLength = high * 256 + low
    const cborStart = lengthIndex - cborLength
    if (cborStart < 0) return malformed('CBOR length reaches before the start of calldata', schemaId)
    if (cborLength === 0) return malformed('CBOR payload is empty', schemaId)
    return cborStart
  }
  return malformed(`unknown schema id ${schemaId}`, schemaId)
}

/** EIP-55 costs a keccak; the few registries in circulation are checksummed once. */
const checksummed = new Map<string, Address>()
function checksum(address: string): Address {
  let value = checksummed.get(address)
  if (!value) {
    if (checksummed.size >= 10_000) checksummed.clear()
    value = OxAddress.checksum(address)
    checksummed.set(address, value)
  }
  return value
}

type Parsed = { entries: AttributedCode[]; codeRegistry?: CodeRegistry; registries?: Attributed['registries']; metadata?: Record<string, unknown> }

function entry(code: string, role: CodeRole): AttributedCode {
  return { code, role, valid: isValidCode(code) }
}

/**
 * Comma-separated codes read straight from the hex: the common all-ASCII
 * case builds each code from char codes without copying bytes; anything
 * else is decoded as UTF-8 with every invalid sequence turned into U+FFFD
 * (as ox, through TextDecoder, reads it). Such a code is kept and flagged
 * invalid (see storableCode); the other codes of the suffix still count.
 */
function readCodes(hex: string, from: number, to: number): string[] {
  const codes: string[] = []
  let current = ''
  for (let i = from; i < to; i++) {
    const byte = byteAt(hex, i)
    if (byte >= 0x80) return lenientUtf8(hex, from, to).split(',').map(storableCode)
    if (byte === 0x2c) {
      codes.push(storableCode(current))
      current = ''
    } else {
      current += String.fromCharCode(byte)
    }
  }
  codes.push(storableCode(current))
  return codes
}

const lenientDecoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true })

function lenientUtf8(hex: string, from: number, to: number): string {
  return lenientDecoder.decode(Buffer.from(hex.slice(2 + 2 * from, 2 + 2 * to), 'hex'))
}

/**
 * A code as it is stored and served: NUL, which no Postgres text can hold,
 * becomes U+FFFD like bytes that are not UTF-8, and a code past
 * ATTRIBUTION_LIMITS.maxCodeBytes is cut to its bounded form (limits.ts).
 * Either way the code is outside the registry rule, so it is counted under
 * that name, flagged invalid, and never resolved.
 */
function storableCode(code: string): string {
  return boundedCode(code.includes('\0') ? code.replaceAll('\0', '\uFFFD') : code)
}

/**
 * Registry chain ids must fit the `registry_chain_id` column as a safe
 * JavaScript integer: at most 2^53 - 1 (what ox reads and writes too).
 */
export const MAX_REGISTRY_CHAIN_ID = Number.MAX_SAFE_INTEGER

/** Schemas 0 and 1: `[registry(20) ‖ chainId ‖ chainIdLength(1)]? ‖ codes ‖ codesLength(1)`, `start` being the suffix's first byte. */
function parseCodes(hex: string, size: number, start: number, schemaId: 0 | 1): Parsed | Malformed {
  const lengthIndex = size - MARKER_BYTES - 2
  const codesStart = lengthIndex - byteAt(hex, lengthIndex)
  const entries = readCodes(hex, codesStart, lengthIndex).map((code) => entry(code, 'code'))
  if (schemaId === 0) return { entries }
  let chainId = 0n
  for (let i = start + 20; i < codesStart - 1; i++) chainId = chainId * 256n + BigInt(byteAt(hex, i))
  if (chainId > BigInt(MAX_REGISTRY_CHAIN_ID)) return malformed('registry chain id is above 2^53 - 1', schemaId)
  const address = detached(`0x${hex.slice(2 + 2 * start, 2 + 2 * (start + 20)).toLowerCase()}`)
  return { entries, codeRegistry: { chainId: Number(chainId), address: checksum(address) } }
}

type CborRegistry = { c?: unknown; a?: unknown } | undefined

/**
 * A schema-2 registry chain id: a CBOR unsigned integer (as the EIP's
 * example writes it) or a hex text string (`0x` or `0X`, as ox writes it),
 * from 1 to 2^53 - 1. Undefined when it is neither.
 */
function cborChainId(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? value : undefined
  if (typeof value === 'bigint') return value > 0n && value <= BigInt(MAX_REGISTRY_CHAIN_ID) ? Number(value) : undefined
  if (typeof value !== 'string' || !/^0[xX][0-9a-fA-F]{1,64}$/.test(value)) return undefined
  const chainId = BigInt(`0x${value.slice(2)}`)
  return chainId > 0n && chainId <= BigInt(MAX_REGISTRY_CHAIN_ID) ? Number(chainId) : undefined
}

/** A registry of the `r` map: absent when `c` or `a` is missing (or zero, as ox reads it), malformed when either is not what it should be. */
function cborRegistry(value: CborRegistry): CodeRegistry | undefined | Malformed {
  if (!value || typeof value !== 'object' || !value.c || !value.a) return undefined
  const chainId = cborChainId(value.c)
  if (chainId === undefined) return malformed('registry chain id is not an integer or hex number from 1 to 2^53 - 1', 2)
  if (typeof value.a !== 'string' || !OxAddress.validate(value.a, { strict: false })) return malformed('registry address is not an address', 2)
  return { chainId, address: checksum(detached(value.a.toLowerCase())) }
}

/**
 * Schema 2: a CBOR map with `a` (app code), `w` (wallet code), `s` (service
 * codes), `r` (registries) and `m` (metadata), decoded with ox's CBOR codec.
 */
function parseCbor(hex: string, size: number, start: number): Parsed | Malformed {
  const cborEnd = size - MARKER_BYTES - 3
  let decoded: unknown
  try {
    // hex, not a Buffer: Buffer's toString would turn a byte-string map key into a text key that ox does not see
    decoded = Cbor.decode(`0x${hex.slice(2 + 2 * start, 2 + 2 * cborEnd)}`)
  } catch (error) {
    return malformed(`invalid CBOR: ${(error as Error).message?.split('\n')[0] ?? 'unknown error'}`, 2)
  }
  if (!decoded || typeof decoded !== 'object' || Array.isArray(decoded)) return malformed('CBOR payload is not a map', 2)
  const map = decoded as { a?: unknown; w?: unknown; s?: unknown; r?: { a?: CborRegistry; w?: CborRegistry }; m?: unknown }
  // refused before a code is read: a few kilobytes of CBOR can list thousands of one-letter codes
  if (Array.isArray(map.s) && map.s.length > ATTRIBUTION_LIMITS.maxSuffixCodes) return tooManyCodes(map.s.length)
  const entries: AttributedCode[] = []
  // CBOR text strings are decoded leniently (bad UTF-8 becomes U+FFFD): such a code is kept, flagged invalid
  if (typeof map.a === 'string') entries.push(entry(storableCode(map.a), 'app'))
  if (typeof map.w === 'string') entries.push(entry(storableCode(map.w), 'wallet'))
  if (Array.isArray(map.s)) for (const code of map.s) if (typeof code === 'string') entries.push(entry(storableCode(code), 'service'))
  const parsed: Parsed = { entries }
  if (map.r && typeof map.r === 'object') {
    const app = cborRegistry(map.r.a)
    const wallet = cborRegistry(map.r.w)
    if (app && 'kind' in app) return app
    if (wallet && 'kind' in wallet) return wallet
    if (app || wallet) parsed.registries = { ...(app && { app }), ...(wallet && { wallet }) }
  }
  if (map.m && typeof map.m === 'object') parsed.metadata = jsonSafe(map.m) as Record<string, unknown>
  return parsed
}

function tooManyCodes(count: number, schemaId = 2): Malformed {
  return malformed(`suffix carries ${count} codes, more than ${ATTRIBUTION_LIMITS.maxSuffixCodes}`, schemaId)
}

/** CBOR metadata may hold bigints and byte strings; turn them into JSON-friendly strings. */
function jsonSafe(value: unknown, depth = 0): unknown {
  if (depth > 16) return null
  if (typeof value === 'bigint') return value.toString()
  if (value instanceof Uint8Array) return `0x${Buffer.from(value).toString('hex')}`
  if (Array.isArray(value)) return value.map((item) => jsonSafe(item, depth + 1))
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, jsonSafe(item, depth + 1)]))
  }
  return value
}


/**
 * Decoded suffixes by their hex. An app appends the same suffix to all its
 * transactions, so most attributed calldata repeats a suffix seen moments
 * ago. Results are shared between callers, so every one is frozen, all the
 * way down (deepFrozen): a caller that tried to change one would throw,
 * not change what the next caller reads.
 *
 * A suffix is remembered only the second time it is seen (`seenOnce` keeps
 * the first sightings): a chain's long tail of one-off suffixes (code
 * combinations, metadata) would otherwise push the busy apps' suffixes out
 * of the oldest-first map, and pay a freeze for entries never read again.
 * On the dense bench chain's suffixes (148k distinct in 300k) this took
 * hits from 22% to 36% and freezes from 232k to 6k.
 */
const recentSuffixes = new Map<string, Attributed | Malformed>()
/** Distinct suffixes remembered (about 3 MB): the suffixes of the apps active right now. */
const RECENT_SUFFIXES = 4_096
/** Suffixes seen once since the set was last emptied (at RECENT_SUFFIXES: at most about 4 MB of keys). */
const seenOnce = new Set<string>()
/** Longest suffix remembered (bytes): every honest suffix, and a bound on what the cache can hold. */
const RECENT_SUFFIX_BYTES = 512

/**
 * Decodes the ERC-8021 suffix of hex calldata. Never throws: calldata
 * without the marker is `none`, a suffix that cannot be read is `malformed`
 * with the reason, anything else is `attributed`.
 *
 * Only the suffix is ever read. Schemas 0 and 1 are plain byte fields read
 * straight from the hex; schema 2's CBOR goes through ox's codec. `ox/erc8021`
 * stays the reference: the tests and the fault suite check that every
 * suffix it builds decodes to what it encoded.
 */
export function decodeAttribution(input: string): DecodeResult {
  if (!hasMarker(input)) return NONE
  // `0X` is accepted like `0x` (ox reads both); the suffix it reports is always `0x` and lower case
  if (input.length % 2 !== 0 || input.charCodeAt(0) !== 48 || (input.charCodeAt(1) | 0x20) !== 120) {
    return malformed('calldata is not 0x-prefixed whole bytes')
  }
  const size = (input.length - 2) / 2
  if (size < MARKER_BYTES + 1) return malformed('calldata ends before the schema id')
  const schemaId = byteAt(input, size - MARKER_BYTES - 1)
  if (schemaId < 0) return malformed('calldata is not hex')
  const start = locateSuffix(input, size, schemaId)
  if (typeof start !== 'number') return start
  // checked before the suffix is scanned or parsed: its cost stays bounded whatever its length fields say
  if (size - start > ATTRIBUTION_LIMITS.maxSuffixBytes) {
    return malformed(`suffix is ${size - start} bytes, more than ${ATTRIBUTION_LIMITS.maxSuffixBytes}`, schemaId)
  }
  const tail = input.slice(2 + 2 * start)
  const cached = recentSuffixes.get(tail)
  if (cached) return cached
  const key = detached(tail)
  const result = decodeSuffix(input, size, start, schemaId, key)
  // a long suffix is decoded each time: remembering thousands of them is what an attacker would want
  if (tail.length > 2 * RECENT_SUFFIX_BYTES) return result
  if (!seenOnce.delete(key)) {
    if (seenOnce.size >= RECENT_SUFFIXES) seenOnce.clear()
    seenOnce.add(key)
    return result
  }
  // oldest first out: Map keeps insertion order
  if (recentSuffixes.size >= RECENT_SUFFIXES) recentSuffixes.delete(recentSuffixes.keys().next().value!)
  recentSuffixes.set(key, deepFrozen(result))
  return result
}

/** `value` and everything it holds, frozen (decoded suffixes are small: at most ATTRIBUTION_LIMITS.maxSuffixBytes). */
function deepFrozen<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const item of Object.values(value)) deepFrozen(item)
  }
  return value
}


function decodeSuffix(input: string, size: number, start: number, schemaId: number, tail: string): Attributed | Malformed {
  const hexCase = scanHex(input, 2 + 2 * start)
  if (hexCase < 0) return malformed('calldata is not hex', schemaId)
  const parsed = schemaId === 2 ? parseCbor(input, size, start) : parseCodes(input, size, start, schemaId as 0 | 1)
  if ('kind' in parsed) return parsed
  if (parsed.entries.length === 0) return malformed('suffix carries no codes', schemaId)
  if (parsed.entries.length > ATTRIBUTION_LIMITS.maxSuffixCodes) return tooManyCodes(parsed.entries.length, schemaId)
  const suffix = `0x${hexCase ? tail.toLowerCase() : tail}` as Hex
  const result: Attributed = {
    kind: 'attributed',
    schemaId: schemaId as SchemaId,
    codes: [...new Set(parsed.entries.map((e) => e.code))],
    entries: parsed.entries,
    suffix,
    suffixBytes: size - start,
    suffixGas: calldataGas(suffix),
  }
  if (parsed.codeRegistry) result.codeRegistry = parsed.codeRegistry
  if (parsed.registries) result.registries = parsed.registries
  if (parsed.metadata) result.metadata = parsed.metadata
  return result
}

/** What the registry says of a code: registered (with its wallet), not yet, invalid by the rule, or in a custom registry. */
export type CodeStatus = 'registered' | 'unregistered' | 'invalid' | 'custom'

export type Resolution = { status: CodeStatus; wallet: Address | null; registry: CodeRegistry | null }
