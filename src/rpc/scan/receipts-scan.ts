import type { Hex } from 'viem'
import type { LogFilter, RawReceipt } from '../objects.js'
import { scanBatch } from './answer-scan.js'
import { isWordAt, JSON_BYTES, ScanFailed, walkObject, word } from './bytes.js'
import type { Cursor } from './json-cursor.js'
import { readReceipt } from './receipt-read.js'

const { OPEN_BRACE, OPEN_BRACKET, CLOSE_BRACKET } = JSON_BYTES

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

const keyKind = (body: Buffer, start: number, length: number): number => {
  if (isWordAt(body, start, length, TRANSACTION_HASH)) return KEY_TRANSACTION_HASH
  if (isWordAt(body, start, length, BLOCK_HASH)) return KEY_BLOCK_HASH
  return KEY_OTHER
}

/**
 * End (exclusive) of the receipt object starting at `start`; its own
 * `transactionHash` bounds are left in `values` (bytes.ts walkObject), and
 * its own `blockHash` must be the block's.
 */
function scanReceiptObject(body: Buffer, start: number, blockHash: Uint8Array, values: Int32Array): number {
  const end = walkObject(body, start, keyKind, values)
  // a receipt that cannot prove its block: the ordinary reading says so
  if (values[2 * KEY_TRANSACTION_HASH]! < 0 || values[2 * KEY_BLOCK_HASH]! < 0) throw new ScanFailed('a receipt lacks transactionHash or blockHash')
  if (!sameHashBytes(body, values[2 * KEY_BLOCK_HASH]!, values[2 * KEY_BLOCK_HASH + 1]!, blockHash)) throw new ScanFailed('a receipt of another block')
  return end
}

/** The receipts wanted of one block, looked up by tailKey first. */
type Wanted = { keys: ReadonlySet<number>; hashes: ReadonlySet<string> }

/** A pure cache: each expectation read once, forgotten with it (what it holds follows from its key alone). */
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
function scanReceipt(cursor: Cursor, expected: BlockReceiptsExpected, wanted: Wanted, blockHash: Uint8Array, values: Int32Array, into: Map<string, RawReceipt>) {
  if (cursor.peek() !== OPEN_BRACE) throw new ScanFailed(`expected a receipt object at byte ${cursor.at}`)
  const start = cursor.at
  const body = cursor.body
  const end = scanReceiptObject(body, start, blockHash, values)
  cursor.at = end
  const hashStart = values[2 * KEY_TRANSACTION_HASH]!
  const hashEnd = values[2 * KEY_TRANSACTION_HASH + 1]!
  if (hashEnd - hashStart < 7 || !wanted.keys.has(tailKey(body, hashEnd))) return
  const transactionHash = cursor.text(hashStart, hashEnd).toLowerCase()
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
  const values = new Int32Array(6)
  cursor.expect(OPEN_BRACKET, 'a list of receipts')
  let count = 0
  if (cursor.peek() !== CLOSE_BRACKET) {
    do {
      scanReceipt(cursor, expected, wanted, blockHash, values, kept)
      count++
    } while (cursor.more(CLOSE_BRACKET))
  } else cursor.at++
  if (count !== expected.txCount) throw new ScanFailed(`${count} receipts for ${expected.txCount} transactions`)
  return kept
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
 * The receipt of a lone `eth_getTransactionReceipt` answer, reduced to its
 * fields and the logs `filter` keeps, read from the bytes (any id: a call
 * sent alone is answered alone); undefined when the scanner cannot read it
 * (a null result, an error item, an odd layout): the caller then parses the
 * answer as it came.
 */
export function reducedReceipt(body: Buffer, filter: LogFilter): RawReceipt | undefined {
  try {
    const [receipt] = scanBatch(body, [0], (cursor) => (cursor.peek() === OPEN_BRACE ? readReceipt(cursor, filter) : undefined))
    return receipt
  } catch (error) {
    if (error instanceof ScanFailed) return undefined
    throw error
  }
}
