/**
 * What the scanners (block-scan.ts, receipts-scan.ts, receipt-read.ts,
 * json-cursor.ts) share: their one error, the byte values of JSON's
 * punctuation, and the loop that walks one object's own members.
 *
 * Every scanner relies on the same facts about a JSON-RPC answer, checked
 * once over the whole answer before any walk (`checkScannable`): ASCII only
 * (byte offsets are character offsets) and no backslash (the next quote
 * closes a string, no key hides behind an escape). A scanner never decides
 * an answer is bad, only that it cannot read it (ScanFailed): its caller
 * then parses the answer the ordinary way.
 */
import { isAscii } from 'node:buffer'

export class ScanFailed extends Error {
  override name = 'ScanFailed'
}

/**
 * JSON's punctuation as byte values. A scanner binds the ones it uses to
 * module constants (`const { QUOTE } = JSON_BYTES`): read through an import
 * binding inside a byte loop, each would be a property read per byte under
 * vitest's and tsx's module transforms.
 */
export const JSON_BYTES = Object.freeze({
  TAB: 9,
  LINE_FEED: 10,
  CARRIAGE_RETURN: 13,
  SPACE: 32,
  QUOTE: 34,
  COMMA: 44,
  COLON: 58,
  OPEN_BRACKET: 91,
  BACKSLASH: 92,
  CLOSE_BRACKET: 93,
  OPEN_BRACE: 123,
  CLOSE_BRACE: 125,
})

const { QUOTE, COMMA, COLON, BACKSLASH, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET } = JSON_BYTES

/** JSON's whitespace: space, tab, line feed, carriage return. */
export function isWhitespace(code: number | undefined): boolean {
  return code === 32 || code === 10 || code === 13 || code === 9
}

/** A word (a key) as bytes, to compare against the answer's. */
export const word = (text: string) => Buffer.from(text, 'latin1')

/** Whether the `length` bytes at `start` are `word`'s. */
export function isWordAt(body: Uint8Array, start: number, length: number, word: Uint8Array): boolean {
  if (length !== word.length) return false
  for (let k = 0; k < length; k++) if (body[start + k] !== word[k]) return false
  return true
}

/** ScanFailed unless the whole answer is what every scanner relies on: no escape, ASCII only. */
export function checkScannable(body: Buffer): void {
  // two native passes over the bytes: an escape anywhere means strings may hold quotes or hide keys
  if (body.indexOf(BACKSLASH) >= 0) throw new ScanFailed('the answer holds escaped characters')
  // ASCII only, so byte offsets are character offsets and a Latin-1 slice is the text JSON.parse would see
  if (!isAscii(body)) throw new ScanFailed('the answer holds bytes outside ASCII')
}

/** How far a string is searched byte by byte before the native search: keys, hashes and addresses are short; calldata, blooms and log data long. */
const SHORT_STRING = 80

/**
 * Index of the quote closing the string opened at `open`. Most strings of a
 * block or receipt are keys, hashes and addresses under 70 bytes, where a
 * loop here is cheaper than a call into the native search; longer ones
 * (calldata, blooms, log data) get it.
 */
export function closingQuote(body: Buffer, open: number): number {
  const stop = Math.min(body.length, open + SHORT_STRING)
  for (let i = open + 1; i < stop; i++) if (body[i] === QUOTE) return i
  const end = body.indexOf(QUOTE, stop)
  if (end < 0) throw new ScanFailed('unterminated string')
  return end
}

/** JSON.parse of the (ASCII) bytes [start, end). */
export function parseBytes(body: Buffer, start: number, end: number, what: string): unknown {
  try {
    return JSON.parse(body.toString('latin1', start, end))
  } catch {
    throw new ScanFailed(`${what} is not JSON`)
  }
}

/**
 * The keys a walk reads: the kind (1, 2, … up to 30) of the key at
 * [start, start + length), or 0 for a key it passes over.
 */
export type KeyKinds = (body: Buffer, start: number, length: number) => number

/**
 * Walks the object whose `{` is at `start` and returns its end (exclusive).
 * For each of its own keys (depth 1) that `kindOf` names, the string value's
 * bounds go into `values` (`values[2k]`, `values[2k + 1]` for kind k; -1
 * when the key is absent or its value is not a string). A named key given
 * twice is ScanFailed: JSON.parse keeps the last, and a scanner should not
 * guess which counts. One byte loop, nothing allocated; nested objects'
 * keys of the same names are one level down and not read.
 */
export function walkObject(body: Buffer, start: number, kindOf: KeyKinds, values: Int32Array): number {
  values.fill(-1)
  let i = start
  let depth = 0
  let expectKey = true
  let key = 0
  let seen = 0
  for (;;) {
    const c = body[i]
    if (c === QUOTE) {
      const end = closingQuote(body, i)
      if (depth === 1 && expectKey) {
        key = kindOf(body, i + 1, end - i - 1)
        if (key !== 0) {
          if (seen & (1 << key)) throw new ScanFailed('an object repeats a key the scanner reads')
          seen |= 1 << key
        }
      } else if (depth === 1 && key !== 0) {
        values[2 * key] = i + 1
        values[2 * key + 1] = end
        key = 0
      }
      i = end + 1
      continue
    }
    if (c === COLON) expectKey = false
    else if (c === COMMA) {
      expectKey = true
      key = 0
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      // a read key whose value is not a string (an object, a list) is not read: the object then lacks it
      if (depth === 1) key = 0
      depth++
      expectKey = c === OPEN_BRACE
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--
      if (depth === 0) return i + 1
      if (depth < 0) throw new ScanFailed('unbalanced object')
    } else if (c === undefined) throw new ScanFailed('the answer ends inside an object')
    // null, a number or a boolean after a read key: not a string, not read
    else if (depth === 1 && !expectKey && !isWhitespace(c)) key = 0
    i++
  }
}
