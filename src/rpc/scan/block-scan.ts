import type { Hex } from 'viem'
import type { RawTransaction } from '../objects.js'
import { checkScannable, closingQuote, isWhitespace, isWordAt, JSON_BYTES, parseBytes, ScanFailed, walkObject, word } from './bytes.js'

export { ScanFailed }

/**
 * Reading a batch of full blocks without parsing it.
 *
 * `JSON.parse` of a batch response turns every transaction into an object
 * only to throw almost all of them away: the indexer wants fewer than one in
 * fifty. This scanner walks the response's bytes once — never decoding them
 * to a string: a megabyte answer decoded is a megabyte string for the
 * garbage collector — and for each transaction looks only at two values, as
 * the caller's TransactionFilter says: how `input` ends and where `to`
 * points. Of the transactions that match, only the values the indexer reads
 * (RawTransaction's) are decoded, found by the same walk: on a dense chain
 * half the transactions match, and parsing each whole made a string of
 * every field of it (signature, gas, access list) for the collector.
 *
 * It relies on what JSON-RPC block objects are: ASCII hex strings, numbers,
 * booleans, arrays and objects, with no escapes inside strings. Anything it
 * does not recognise — a backslash anywhere (an escaped quote would end a
 * string early, `\u0069nput` would hide a key), a byte outside ASCII, an
 * error item, a null result, a key given twice, a candidate that does not
 * parse (one lacking a read value as a string is parsed whole: a null `to`),
 * another layout — makes it give up with ScanFailed, and the caller
 * parses the response the ordinary way and applies the same filter
 * (matchesFilter). It never guesses, and never throws anything but
 * ScanFailed.
 */

export type ScannedBlock<Candidate = RawTransaction> = {
  number: number
  hash: Hex
  parentHash: Hex
  timestamp: number
  txCount: number
  /** The transactions that match the filter, their RawTransaction values read (and reduced by the caller's `keep`: batches.ts). */
  candidates: Candidate[]
}

/** Which transactions to parse. The transport does not know why; the caller does (attribution/records.ts). */
export type TransactionFilter = {
  /** Hex digits (no `0x`) the input must end with, as nodes write them: lowercase. */
  inputSuffix: string
  /** Lowercase addresses; a transaction sent to one matches whatever the letter case of its `to`. */
  toAddresses: ReadonlySet<string>
}

const { QUOTE, COMMA, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET } = JSON_BYTES
const LOWER_I = 105
const LOWER_T = 116
const TRANSACTIONS_KEY = Buffer.from('"transactions":[', 'latin1')

/** The filter both readings apply: the scanner's, and this one on a parsed transaction. */
export function matchesFilter(tx: { input?: unknown; to?: unknown }, filter: TransactionFilter): boolean {
  if (typeof tx.input === 'string' && tx.input.length >= 2 + filter.inputSuffix.length && tx.input.endsWith(filter.inputSuffix)) return true
  // nodes answer lowercase, but nothing forces them to
  return typeof tx.to === 'string' && byteFilterOf(filter).lowercase.has(tx.to.toLowerCase())
}

/** The filter as the scanner reads it: the suffix as bytes, each listed address lowercase (as a string and as bytes). */
type ByteFilter = { suffix: Uint8Array; lowercase: ReadonlySet<string>; addresses: Uint8Array[] }

/** A pure cache: each filter object compiled once, forgotten with it (what it holds follows from its key alone). */
const compiled = new WeakMap<TransactionFilter, ByteFilter>()

function byteFilterOf(filter: TransactionFilter): ByteFilter {
  let bytes = compiled.get(filter)
  if (!bytes) {
    const lowercase = new Set([...filter.toAddresses].map((address) => address.toLowerCase()))
    bytes = { suffix: Buffer.from(filter.inputSuffix, 'latin1'), lowercase, addresses: [...lowercase].map((address) => Buffer.from(address, 'latin1')) }
    compiled.set(filter, bytes)
  }
  return bytes
}

/** Whether the string value between `start` and `end` (exclusive, quotes outside) ends with `suffix`. */
function endsWith(body: Uint8Array, start: number, end: number, suffix: Uint8Array): boolean {
  // "0x" and at least one byte of the suffix's length before it, as matchesFilter asks
  if (end - start < 2 + suffix.length) return false
  for (let k = suffix.length - 1, i = end - 1; k >= 0; k--, i--) if (body[i] !== suffix[k]) return false
  return true
}

/** Whether the string value between `start` and `end` is one of `addresses`, in any letter case. */
function isListedBytes(body: Uint8Array, start: number, end: number, addresses: readonly Uint8Array[]): boolean {
  next: for (const address of addresses) {
    if (end - start !== address.length) continue
    // hex digits and `x`: OR-ing 0x20 lowercases A-F and X and leaves digits alone
    for (let k = 0; k < address.length; k++) if ((body[start + k]! | 0x20) !== address[k]) continue next
    return true
  }
  return false
}

const KEY_OTHER = 0
const KEY_INPUT = 1
const KEY_TO = 2
const KEY_HASH = 3
const KEY_FROM = 4
const KEY_TRANSACTION_INDEX = 5
const KEY_BLOCK_NUMBER = 6
const KEY_BLOCK_HASH = 7
/** The walk's scratch: two bounds per key kind, KEY_OTHER's unused. */
const VALUES_LENGTH = 2 * (KEY_BLOCK_HASH + 1)

const HASH = word('hash')
const FROM = word('from')
const TRANSACTION_INDEX = word('transactionIndex')
const BLOCK_NUMBER = word('blockNumber')
const BLOCK_HASH = word('blockHash')

/** The keys the walk reads: `input` and `to` to match every transaction, the rest to read a candidate's values. */
const keyKind = (body: Uint8Array, start: number, length: number): number => {
  switch (length) {
    case 5:
      return body[start] === LOWER_I && body[start + 1] === 110 && body[start + 2] === 112 && body[start + 3] === 117 && body[start + 4] === LOWER_T
        ? KEY_INPUT
        : KEY_OTHER
    case 2:
      return body[start] === LOWER_T && body[start + 1] === 111 ? KEY_TO : KEY_OTHER
    case 4:
      return isWordAt(body, start, length, HASH) ? KEY_HASH : isWordAt(body, start, length, FROM) ? KEY_FROM : KEY_OTHER
    case 16:
      return isWordAt(body, start, length, TRANSACTION_INDEX) ? KEY_TRANSACTION_INDEX : KEY_OTHER
    case 11:
      return isWordAt(body, start, length, BLOCK_NUMBER) ? KEY_BLOCK_NUMBER : KEY_OTHER
    case 9:
      return isWordAt(body, start, length, BLOCK_HASH) ? KEY_BLOCK_HASH : KEY_OTHER
    default:
      return KEY_OTHER
  }
}

/**
 * A matching transaction's RawTransaction values, from the bounds its walk
 * found: each a string, as JSON.parse would read it (no escapes, ASCII:
 * checkScannable). A transaction lacking one as a string (a contract
 * creation's null `to`, or a node's odd answer) is parsed whole instead,
 * so that it means exactly what the ordinary parse would make of it.
 */
function candidateOf(body: Buffer, start: number, end: number, values: Int32Array): RawTransaction {
  for (let kind = KEY_INPUT; kind <= KEY_BLOCK_HASH; kind++) if (values[2 * kind]! < 0) return parseBytes(body, start, end, 'a candidate transaction') as RawTransaction
  const text = (kind: number) => body.toString('latin1', values[2 * kind]!, values[2 * kind + 1]!)
  return {
    hash: text(KEY_HASH) as Hex,
    from: text(KEY_FROM) as Hex,
    to: text(KEY_TO) as Hex,
    input: text(KEY_INPUT) as Hex,
    transactionIndex: text(KEY_TRANSACTION_INDEX) as Hex,
    blockNumber: text(KEY_BLOCK_NUMBER) as Hex,
    blockHash: text(KEY_BLOCK_HASH) as Hex,
  }
}

/**
 * End (exclusive) of the transaction object starting at `start`, negated
 * (`-end`) when the transaction matches the filter: one number back, so the
 * hot loop allocates nothing. `values` is the walk's scratch (bytes.ts walkObject).
 */
function scanTransaction(body: Buffer, start: number, filter: ByteFilter, values: Int32Array): number {
  const end = walkObject(body, start, keyKind, values)
  // calldata is most of a block's bytes: only its tail is compared
  const matched =
    (values[2 * KEY_INPUT]! >= 0 && endsWith(body, values[2 * KEY_INPUT]!, values[2 * KEY_INPUT + 1]!, filter.suffix)) ||
    (values[2 * KEY_TO]! >= 0 && isListedBytes(body, values[2 * KEY_TO]!, values[2 * KEY_TO + 1]!, filter.addresses))
  return matched ? -end : end
}

/** Start of the object enclosing `position`: a backward walk counting braces (strings hold none). */
function enclosingObjectStart(body: Uint8Array, position: number): number {
  let depth = 0
  for (let i = position - 1; i >= 0; i--) {
    const c = body[i]
    if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth++
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth === 0) {
        if (c !== OPEN_BRACE) throw new ScanFailed('transactions are not inside an object')
        return i
      }
      depth--
    }
  }
  throw new ScanFailed('no object encloses the transactions')
}

/** End (exclusive) of the object that is open at `position`. */
function enclosingObjectEnd(body: Buffer, position: number): number {
  let depth = 0
  for (let i = position; i < body.length; i++) {
    const c = body[i]
    if (c === QUOTE) i = closingQuote(body, i)
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (depth === 0) return i + 1
      depth--
    }
  }
  throw new ScanFailed('block object does not end')
}

type HeaderFields = { number: Hex; hash: Hex; parentHash: Hex; timestamp: Hex }

/** The block's own fields: its object with the transactions array left out. */
function headerOf(body: Buffer, blockStart: number, arrayStart: number, arrayEnd: number, blockEnd: number): HeaderFields {
  let header: Partial<HeaderFields>
  try {
    header = JSON.parse(`${body.toString('latin1', blockStart, arrayStart)}]${body.toString('latin1', arrayEnd, blockEnd)}`) as Partial<HeaderFields>
  } catch {
    throw new ScanFailed('block header is not JSON')
  }
  if (typeof header.number !== 'string' || typeof header.hash !== 'string' || typeof header.parentHash !== 'string' || typeof header.timestamp !== 'string') {
    throw new ScanFailed('block header lacks number, hash, parentHash or timestamp')
  }
  return header as HeaderFields
}

/**
 * The blocks of a batch response's bytes, in the order of `numbers`, or
 * ScanFailed when the response is not exactly one full block for each number.
 *
 * Each transaction the filter lets through goes to `detect` as soon as it is
 * read, and the block keeps what `detect` returns (dropped where undefined):
 * a candidate's text (its calldata most of it) then dies before the rest of
 * the answer is read. Held until the whole batch was, a dense chain's ~100
 * candidates a block lived through the main thread's scavenges and were
 * promoted to its old generation: a third of all it promoted (bench/LOG.md).
 * `detect` must have no effect beyond its answer: a scan that fails half-way
 * is read again call by call.
 */
export function scanBlockBatch<Detected = RawTransaction>(
  body: Buffer,
  numbers: readonly number[],
  filter: TransactionFilter,
  detect: (tx: RawTransaction) => Detected | undefined = (tx) => tx as Detected,
): ScannedBlock<Detected>[] {
  checkScannable(body)
  const bytes = byteFilterOf(filter)
  const values = new Int32Array(VALUES_LENGTH)
  const byNumber = new Map<number, ScannedBlock<Detected>>()
  let from = 0
  for (;;) {
    const keyAt = body.indexOf(TRANSACTIONS_KEY, from)
    if (keyAt < 0) break
    const blockStart = enclosingObjectStart(body, keyAt)
    const arrayStart = keyAt + TRANSACTIONS_KEY.length
    let i = arrayStart
    let txCount = 0
    const candidates: Detected[] = []
    for (;;) {
      let c = body[i]
      while (c === COMMA || (c !== undefined && isWhitespace(c))) c = body[++i]
      if (c === CLOSE_BRACKET) break
      if (c !== OPEN_BRACE) throw new ScanFailed('transactions hold something other than objects (hashes only?)')
      const scanned = scanTransaction(body, i, bytes, values)
      const end = Math.abs(scanned)
      if (scanned < 0) {
        const detected = detect(candidateOf(body, i, end, values))
        if (detected !== undefined) candidates.push(detected)
      }
      txCount++
      i = end
    }
    const arrayEnd = i + 1
    const blockEnd = enclosingObjectEnd(body, arrayEnd)
    const header = headerOf(body, blockStart, arrayStart, arrayEnd, blockEnd)
    const number = Number.parseInt(header.number, 16)
    if (byNumber.has(number)) throw new ScanFailed(`block ${number} appears twice`)
    byNumber.set(number, {
      number,
      hash: header.hash,
      parentHash: header.parentHash,
      timestamp: Number.parseInt(header.timestamp, 16),
      txCount,
      candidates,
    })
    from = blockEnd
  }
  if (byNumber.size !== numbers.length) throw new ScanFailed(`found ${byNumber.size} blocks for ${numbers.length} requested`)
  return numbers.map((number) => {
    const block = byNumber.get(number)
    if (!block) throw new ScanFailed(`block ${number} is missing`)
    return block
  })
}
