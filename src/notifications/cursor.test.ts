import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createCursorCodec } from './cursor.js'
import { InvalidCursorError } from '../contract/cursor-error.js'

const codec = createCursorCodec('a-secret-of-at-least-16-chars')

describe('pagination cursors', () => {
  it('round-trip any position within their scope', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.string(), (position, scope) => {
        const cursor = codec.encode(scope, position)
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/)
        expect(codec.decode(scope, cursor)).toBe(position)
      }),
    )
  })

  it('reject any single-character change', () => {
    const cursor = codec.encode('scope', 1234)
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    for (let index = 0; index < cursor.length; index++) {
      for (const replacement of alphabet) {
        if (replacement === cursor[index]) continue
        const tampered = `${cursor.slice(0, index)}${replacement}${cursor.slice(index + 1)}`
        expect(() => codec.decode('scope', tampered), tampered).toThrow(InvalidCursorError)
      }
    }
  })

  it('reject another scope, another secret, and arbitrary strings', () => {
    const cursor = codec.encode('app-a', 10)
    expect(() => codec.decode('app-b', cursor)).toThrow(InvalidCursorError)
    expect(() => createCursorCodec('another-secret-16-chars-long').decode('app-a', cursor)).toThrow(InvalidCursorError)
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (garbage) => {
        expect(() => codec.decode('app-a', garbage)).toThrow(InvalidCursorError)
      }),
    )
  })
})
