import { checkScannable, JSON_BYTES, ScanFailed, word } from './bytes.js'
import { Cursor, parsePart } from './json-cursor.js'

/**
 * The frame of a JSON-RPC answer, read without parsing it: a batch (a list
 * of `{"jsonrpc","id","result"}` items in any order) or a single item,
 * each result handed to the caller's reader with the cursor on it. The
 * receipts scanner (receipts-scan.ts) reads its results through this; an
 * error item, an id not asked or asked twice, a missing answer or bytes
 * after the answer are ScanFailed, and the caller parses the answer the
 * ordinary way.
 */

const { OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET, COLON } = JSON_BYTES

const ID = word('id')
const RESULT = word('result')
const ERROR = word('error')

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
export function scanBatch<T>(body: Buffer, ids: readonly number[], read: (cursor: Cursor, slot: number) => T): T[] {
  checkScannable(body)
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
