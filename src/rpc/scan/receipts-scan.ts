import { isAscii } from 'node:buffer'
import type { Hex } from 'viem'
import { ScanFailed } from './block-scan.js'
import { Cursor, parsePart, word } from './json-cursor.js'
import type { LogFilter, RawReceipt } from '../objects.js'
import { readReceipt } from './receipt-read.js'

// byte values as local constants: read through an import, each is a getter call in the loops below (tsx's module output)
const BACKSLASH = 92
const CLOSE_BRACE = 125
const CLOSE_BRACKET = 93
const COLON = 58
const COMMA = 44
const OPEN_BRACE = 123
const OPEN_BRACKET = 91
const QUOTE = 34

/**
 * Reading a batch of receipts answers without parsing it: `eth_getBlockReceipts`
 * (whole blocks) and `eth_getTransactionReceipt` (one each).
 *
 * On a dense chain the indexer asks a block's receipts whole because that is
 * one call instead of a hundred, yet it needs only the candidates' receipts:
 * `JSON.parse` of the whole answer builds every receipt and every log as
 * objects to throw nearly all away (BENCHMARKS.md, dense chain). This
 * scanner walks the answer's bytes once, reads of each receipt only its
 * `transactionHash` and `blockHash` (the values that prove the receipt
 * belongs to the block asked), counts the receipts, and reads only those of
 * the wanted transactions — and of those only what the index needs
 * (receipt-read.ts): a receipt's logs can be any size its gas pays for.
 *
 * Like block-scan.ts it relies on what JSON-RPC receipts are (ASCII hex
 * strings, numbers, booleans, null, arrays, objects; no escapes) and gives
 * up with ScanFailed on anything else: a backslash anywhere, a byte outside
 * ASCII, an error item, a null or non-list result, an id not asked or asked
 * twice, a key given twice, a receipt of another block or without a block
 * hash, a count that differs from the block's transactions, a layout it does
 * not know. The caller then parses the answer the ordinary way, where the
 * same checks (batches.ts) say exactly what was wrong, and the transport
 * retries just the calls that failed. The scanner never decides that an
 * answer is bad, only that it cannot read it alone, so it can never mix
 * receipts of two blocks nor drop one: at worst it costs a parse.
 */

/**
 * What one call of the batch must hold: the receipts of the block
 * `blockHash`, `txCount` of them; `hashes` (lowercase) are kept, each with
 * the logs its filter in `logs` names (none without one).
 */
export type BlockReceiptsExpected = { blockHash: Hex; txCount: number; hashes: ReadonlySet<string>; logs?: ReadonlyMap<string, LogFilter> }

/** What one `eth_getTransactionReceipt` must answer: the receipt of `hash` (lowercase), from the block `blockHash`, with the logs `logs` names. */
export type ReceiptExpected = { hash: string; blockHash: Hex; logs?: LogFilter | undefined }

const ID = word('id')
const RESULT = word('result')
const ERROR = word('error')
const TRANSACTION_HASH = word('transactionHash')
const BLOCK_HASH = word('blockHash')

/** A block hash as the scanner compares it: lowercase bytes. */
function lowercaseBytes(text: string): Uint8Array {
  return Buffer.from(text.toLowerCase(), 'latin1')
}

/** Whether the string at [start, end) is `lowercase` in any letter case (hex digits and x: OR 0x20 lowercases them). */
function sameHashBytes(body: Buffer, start: number, end: number, lowercase: Uint8Array): boolean {
  if (end - start !== lowercase.length) return false
  for (let k = 0; k < lowercase.length; k++) if ((body[start + k]! | 0x20) !== lowercase[k]) return false
  return true
}

/**
 * A number from the last 7 characters of a hash, lowercased: most receipts
 * are not wanted, and this tells so without making a string of their hash
 * (equal numbers are then compared as strings, exactly).
 */
function tailKey(bytes: ArrayLike<number>, end: number): number {
  let key = 0
  for (let i = end - 7; i < end; i++) key = key * 128 + ((bytes[i]! | 0x20) & 0x7f)
  return key
}

const KEY_OTHER = 0
const KEY_TRANSACTION_HASH = 1
const KEY_BLOCK_HASH = 2

function sameBytes(body: Buffer, start: number, length: number, word: Buffer): boolean {
  if (length !== word.length) return false
  for (let k = 0; k < length; k++) if (body[start + k] !== word[k]) return false
  return true
}

function keyKind(body: Buffer, start: number, length: number): number {
  if (sameBytes(body, start, length, TRANSACTION_HASH)) return KEY_TRANSACTION_HASH
  if (sameBytes(body, start, length, BLOCK_HASH)) return KEY_BLOCK_HASH
  return KEY_OTHER
}

/** How far a string is searched byte by byte before the native search: keys and hashes are short, blooms and log data long. */
const SHORT_STRING = 80

/**
 * Index of the quote closing the string opened at `open`. Most strings of a
 * receipt are keys and hashes under 70 bytes, where a loop here is cheaper
 * than a call into the native search; longer ones (blooms, log data) get it.
 */
function closingQuote(body: Buffer, open: number): number {
  const stop = Math.min(body.length, open + SHORT_STRING)
  for (let i = open + 1; i < stop; i++) if (body[i] === QUOTE) return i
  const end = body.indexOf(QUOTE, stop)
  if (end < 0) throw new ScanFailed('unterminated string')
  return end
}

/** What scanning one receipt found; one per scan, reused receipt after receipt. */
type ReceiptFound = { hashStart: number; hashEnd: number; blockHashSeen: boolean }

/**
 * End (exclusive) of the receipt object starting at `start`, with its own
 * `transactionHash` and whether its own `blockHash` is the block's, in
 * `found`. One byte loop, strings passed with a native search: a log's
 * keys of the same names are one level down and not read.
 */
function scanReceiptObject(body: Buffer, start: number, blockHash: Uint8Array, found: ReceiptFound): number {
  found.hashStart = -1
  found.blockHashSeen = false
  let i = start
  let depth = 0
  let expectKey = true
  let key = KEY_OTHER
  for (;;) {
    const c = body[i]
    if (c === QUOTE) {
      const end = closingQuote(body, i)
      if (depth === 1 && expectKey) {
        key = keyKind(body, i + 1, end - i - 1)
        // JSON.parse keeps the last of a repeated key; the scanner would have to guess which counts
        if ((key === KEY_TRANSACTION_HASH && found.hashStart >= 0) || (key === KEY_BLOCK_HASH && found.blockHashSeen)) {
          throw new ScanFailed('a receipt repeats transactionHash or blockHash')
        }
      } else if (depth === 1 && key !== KEY_OTHER) {
        if (key === KEY_TRANSACTION_HASH) {
          found.hashStart = i + 1
          found.hashEnd = end
        } else if (!sameHashBytes(body, i + 1, end, blockHash)) throw new ScanFailed('a receipt of another block')
        else found.blockHashSeen = true
        key = KEY_OTHER
      }
      i = end + 1
      continue
    }
    if (c === COLON) expectKey = false
    else if (c === COMMA) {
      expectKey = true
      key = KEY_OTHER
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      // a key whose value is not a string (null, an object) is not read: the receipt then lacks it
      if (depth === 1) key = KEY_OTHER
      depth++
      expectKey = c === OPEN_BRACE
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--
      if (depth === 0) return i + 1
    } else if (c === undefined) throw new ScanFailed('the answer ends inside a receipt')
    else if (depth === 1 && !expectKey && c !== 32 && c !== 10 && c !== 13 && c !== 9) key = KEY_OTHER
    i++
  }
}

/** The receipts wanted of one block, looked up by tailKey first. */
type Wanted = { keys: ReadonlySet<number>; hashes: ReadonlySet<string> }

const wantedCache = new WeakMap<BlockReceiptsExpected, Wanted>()

function wantedOf(expected: BlockReceiptsExpected): Wanted {
  let wanted = wantedCache.get(expected)
  if (!wanted) {
    const keys = new Set<number>()
    for (const hash of expected.hashes) if (hash.length >= 7) keys.add(tailKey(Buffer.from(hash, 'latin1'), hash.length))
    wanted = { keys, hashes: expected.hashes }
    wantedCache.set(expected, wanted)
  }
  return wanted
}

/**
 * One receipt, the cursor on its `{`: read when its transaction is
 * wanted, else only passed over. Its block hash must be the expected one.
 */
function scanReceipt(cursor: Cursor, expected: BlockReceiptsExpected, wanted: Wanted, blockHash: Uint8Array, found: ReceiptFound, into: Map<string, RawReceipt>) {
  if (cursor.peek() !== OPEN_BRACE) throw new ScanFailed(`expected a receipt object at byte ${cursor.at}`)
  const start = cursor.at
  const body = cursor.body
  const end = scanReceiptObject(body, start, blockHash, found)
  cursor.at = end
  // a receipt that cannot prove its block: the ordinary reading says so
  if (found.hashStart < 0 || !found.blockHashSeen) throw new ScanFailed('a receipt lacks transactionHash or blockHash')
  if (found.hashEnd - found.hashStart < 7 || !wanted.keys.has(tailKey(body, found.hashEnd))) return
  const transactionHash = cursor.text(found.hashStart, found.hashEnd).toLowerCase()
  if (!wanted.hashes.has(transactionHash)) return
  if (into.has(transactionHash)) throw new ScanFailed('a block lists a transaction twice')
  cursor.at = start
  into.set(transactionHash, readReceipt(cursor, expected.logs?.get(transactionHash)))
  if (cursor.at !== end) throw new ScanFailed('a wanted receipt read to another end')
}

/** One call's result, the cursor on it: a list of exactly the block's receipts. */
function scanResult(cursor: Cursor, expected: BlockReceiptsExpected): Map<string, RawReceipt> {
  const kept = new Map<string, RawReceipt>()
  const blockHash = lowercaseBytes(expected.blockHash)
  const wanted = wantedOf(expected)
  const found: ReceiptFound = { hashStart: -1, hashEnd: -1, blockHashSeen: false }
  cursor.expect(OPEN_BRACKET, 'a list of receipts')
  let count = 0
  if (cursor.peek() !== CLOSE_BRACKET) {
    do {
      scanReceipt(cursor, expected, wanted, blockHash, found, kept)
      count++
    } while (cursor.more(CLOSE_BRACKET))
  } else cursor.at++
  if (count !== expected.txCount) throw new ScanFailed(`${count} receipts for ${expected.txCount} transactions`)
  return kept
}

/** One answer item `{"jsonrpc":…,"id":…,"result":…}` in any key order; returns its id (`single` accepts any id) and what `read` made of its result. */
function scanItem<T>(cursor: Cursor, read: (cursor: Cursor, id: number) => T, single: number | undefined): [number, T] {
  cursor.expect(OPEN_BRACE, 'an answer object')
  let id: number | undefined
  let idSeen = false
  let resultAt: number | undefined
  let kept: { value: T } | undefined
  do {
    const [keyStart, keyEnd] = cursor.string()
    cursor.expect(COLON, ':')
    if (cursor.is(keyStart, keyEnd, ERROR)) throw new ScanFailed('an error item')
    if (cursor.is(keyStart, keyEnd, ID)) {
      if (idSeen) throw new ScanFailed('an item repeats id')
      idSeen = true
      cursor.peek()
      const start = cursor.at
      cursor.skipValue()
      const value = parsePart(cursor, start, cursor.at, 'an id')
      id = single ?? (typeof value === 'number' ? value : undefined)
    } else if (cursor.is(keyStart, keyEnd, RESULT)) {
      if (resultAt !== undefined) throw new ScanFailed('an item repeats result')
      cursor.peek()
      resultAt = cursor.at
      // geth and its kin print the id first: the result is read as it is passed; otherwise it is gone back to
      if (id !== undefined) kept = { value: read(cursor, id) }
      else cursor.skipValue()
    } else cursor.skipValue()
  } while (cursor.more(CLOSE_BRACE))
  if (single !== undefined) id = single
  if (id === undefined || resultAt === undefined) throw new ScanFailed('an item without a usable id or a result')
  if (!kept) {
    const after = cursor.at
    cursor.at = resultAt
    kept = { value: read(cursor, id) }
    cursor.at = after
  }
  return [id, kept.value]
}

/**
 * What `read` makes of each call's result in a batch answer, in the order
 * of `ids` (the JSON-RPC ids the calls were sent with; `read` is given the
 * call's slot); ScanFailed when the answer is not exactly one result per id.
 */
function scanBatch<T>(body: Buffer, ids: readonly number[], read: (cursor: Cursor, slot: number) => T): T[] {
  if (body.indexOf(BACKSLASH) >= 0) throw new ScanFailed('the answer holds escaped characters')
  if (!isAscii(body)) throw new ScanFailed('the answer holds bytes outside ASCII')
  const slotOf = new Map(ids.map((id, slot) => [id, slot]))
  const readById = (cursor: Cursor, id: number) => {
    const slot = slotOf.get(id)
    if (slot === undefined) throw new ScanFailed(`an answer to id ${id}, not asked`)
    return read(cursor, slot)
  }
  // no holes: Array.prototype.map would pass over a hole, an answer missing unnoticed
  const found: Array<{ value: T } | undefined> = Array.from({ length: ids.length }, () => undefined)
  const keep = ([id, value]: [number, T]) => {
    const slot = slotOf.get(id)!
    if (found[slot]) throw new ScanFailed(`two answers to id ${id}`)
    found[slot] = { value }
  }
  const cursor = new Cursor(body)
  if (cursor.peek() === OPEN_BRACKET) {
    cursor.at++
    if (cursor.peek() === CLOSE_BRACKET) throw new ScanFailed('an empty batch answer')
    do keep(scanItem(cursor, readById, undefined))
    while (cursor.more(CLOSE_BRACKET))
  } else {
    // a single call is sent alone and answered alone; a proxy may have changed its id
    if (ids.length !== 1) throw new ScanFailed('a single answer to a batch')
    keep(scanItem(cursor, readById, ids[0]))
  }
  if (cursor.peek() !== undefined) throw new ScanFailed('bytes after the answer')
  return found.map((kept, slot) => {
    if (!kept) throw new ScanFailed(`no answer to id ${ids[slot]}`)
    return kept.value
  })
}

/**
 * The wanted receipts of a batch answer of `eth_getBlockReceipts`, one map
 * (lowercase transaction hash → receipt) per call, in the order of `ids`
 * (the JSON-RPC ids the calls were sent with); ScanFailed when the answer is
 * not exactly every block's receipts, each of the block asked.
 */
export function scanBlockReceiptsBatch(body: Buffer, ids: readonly number[], expected: readonly BlockReceiptsExpected[]): Array<Map<string, RawReceipt>> {
  return scanBatch(body, ids, (cursor, slot) => scanResult(cursor, expected[slot]!))
}

/**
 * The receipts of a batch answer of `eth_getTransactionReceipt`, in the
 * order of `ids`, each reduced to what the index reads; ScanFailed unless
 * every one is the receipt asked, from the block it was wanted from (a
 * missing receipt, another transaction's or another block's: the ordinary
 * reading says which, and the transport retries that call).
 */
export function scanReceiptsBatch(body: Buffer, ids: readonly number[], expected: readonly ReceiptExpected[]): RawReceipt[] {
  return scanBatch(body, ids, (cursor, slot) => {
    const wanted = expected[slot]!
    if (cursor.peek() !== OPEN_BRACE) throw new ScanFailed('a result that is not a receipt')
    const receipt = readReceipt(cursor, wanted.logs)
    if (typeof receipt.transactionHash !== 'string' || receipt.transactionHash.toLowerCase() !== wanted.hash) throw new ScanFailed('the receipt of another transaction')
    if (receipt.blockHash != null && (typeof receipt.blockHash !== 'string' || receipt.blockHash.toLowerCase() !== wanted.blockHash.toLowerCase())) {
      throw new ScanFailed('a receipt of another block')
    }
    return receipt
  })
}

/**
 * A lone `eth_getTransactionReceipt` answer, its receipt reduced to its
 * fields and the logs `filter` keeps, as JSON text with the request's `id`;
 * undefined when the scanner cannot read it (a null result, an error item,
 * an odd layout): the caller then parses the answer as it came.
 */
export function reducedReceiptAnswer(body: Buffer, id: number, filter: LogFilter): string | undefined {
  try {
    const [receipt] = scanBatch(body, [id], (cursor) => (cursor.peek() === OPEN_BRACE ? readReceipt(cursor, filter) : undefined))
    return receipt ? JSON.stringify({ jsonrpc: '2.0', id, result: receipt }) : undefined
  } catch (error) {
    if (error instanceof ScanFailed) return undefined
    throw error
  }
}
