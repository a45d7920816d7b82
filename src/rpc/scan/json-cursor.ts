import { JSON_BYTES, isWhitespace, parseBytes, ScanFailed } from './bytes.js'

/**
 * A forward reader over the bytes of a JSON-RPC answer, for the scanners
 * (receipts-scan.ts, receipt-read.ts) that read a few values of an answer
 * without parsing it. It relies on what its callers check of the whole
 * answer first: ASCII, no backslash anywhere (so the next quote closes a
 * string). It never decides that an answer is bad, only that it cannot read
 * it (ScanFailed): the caller then parses it the ordinary way.
 */

const { QUOTE, COMMA, OPEN_BRACE, CLOSE_BRACE, OPEN_BRACKET, CLOSE_BRACKET } = JSON_BYTES

/** The bytes of one answer, read forward from `at`. One per scan: nothing outlives the call. */
export class Cursor {
  at = 0
  constructor(readonly body: Buffer) {}

  /** The next byte that is not whitespace (the cursor left on it). */
  peek(): number | undefined {
    const body = this.body
    let i = this.at
    while (isWhitespace(body[i])) i++
    this.at = i
    return body[i]
  }

  expect(code: number, what: string) {
    if (this.peek() !== code) throw new ScanFailed(`expected ${what} at byte ${this.at}`)
    this.at++
  }

  /** After a member of an object or array: true when another follows, false at the closing bracket. */
  more(close: number): boolean {
    const c = this.peek()
    this.at++
    if (c === COMMA) return true
    if (c === close) return false
    throw new ScanFailed(`expected , or ${String.fromCharCode(close)} at byte ${this.at - 1}`)
  }

  /** A string's contents as [start, end) (quotes outside); the cursor after its closing quote. */
  string(): [number, number] {
    if (this.peek() !== QUOTE) throw new ScanFailed(`expected a string at byte ${this.at}`)
    const start = this.at + 1
    // no backslash anywhere (checked first): the next quote closes the string
    const end = this.body.indexOf(QUOTE, start)
    if (end < 0) throw new ScanFailed('unterminated string')
    this.at = end + 1
    return [start, end]
  }

  /** Passes over one value of any kind, checking only that brackets balance. */
  skipValue() {
    const body = this.body
    const c = this.peek()
    if (c === QUOTE) {
      this.string()
      return
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      let depth = 0
      for (let i = this.at; i < body.length; i++) {
        const b = body[i]
        if (b === QUOTE) {
          i = body.indexOf(QUOTE, i + 1)
          if (i < 0) throw new ScanFailed('unterminated string')
        } else if (b === OPEN_BRACE || b === OPEN_BRACKET) depth++
        else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
          if (--depth === 0) {
            this.at = i + 1
            return
          }
        }
      }
      throw new ScanFailed('value does not end')
    }
    // a number, true, false or null: up to the next delimiter (JSON.parse of the part judges it, where it matters)
    let i = this.at
    while (i < body.length && body[i] !== COMMA && body[i] !== CLOSE_BRACE && body[i] !== CLOSE_BRACKET && !isWhitespace(body[i])) i++
    if (i === this.at) throw new ScanFailed(`expected a value at byte ${this.at}`)
    this.at = i
  }

  text(start: number, end: number): string {
    return this.body.toString('latin1', start, end)
  }

  /** Whether [start, end) is `word`, byte for byte. */
  is(start: number, end: number, word: Buffer): boolean {
    return end - start === word.length && this.body.compare(word, 0, word.length, start, end) === 0
  }
}

/** JSON.parse of a part of the (ASCII) body. */
export function parsePart(cursor: Cursor, start: number, end: number, what: string): unknown {
  return parseBytes(cursor.body, start, end, what)
}
