import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { checkVisibleLength, CODE_POINTS_PER_CHARACTER, MAX_CODE_POINTS_PER_CHARACTER, visibleLength } from './text-length.js'

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' })

describe('visibleLength', () => {
  it.each([
    ['', 0],
    ['hello', 5],
    ['é', 1], // precomposed
    ['e\u0301', 1], // e + combining acute
    ['🎉', 1], // one code point, two UTF-16 units
    ['👨‍👩‍👧', 1], // ZWJ family
    ['👍🏽', 1], // skin tone modifier
    ['🇫🇷', 1], // regional-indicator flag
    ['a🇫🇷b👨‍👩‍👧c', 5],
    ['\r\n', 1],
    ['日本語', 3],
  ])('%j has %i characters', (text, expected) => {
    expect(visibleLength(text)).toBe(expected)
  })
})

describe('checkVisibleLength', () => {
  it.each([
    ['printable ASCII at the limit', 'x'.repeat(30), 30, { ok: true }],
    ['one character over', 'x'.repeat(31), 30, { ok: false, reason: 'too_many_characters' }],
    ['30 family emoji (150 code points)', '👨‍👩‍👧'.repeat(30), 30, { ok: true }],
    ['30 families of four (210 code points)', '👨‍👩‍👧‍👦'.repeat(30), 30, { ok: true }],
    ['31 family emoji', '👨‍👩‍👧'.repeat(31), 30, { ok: false, reason: 'too_many_characters' }],
    ['a letter with 15 combining marks', `a${'\u0301'.repeat(15)}`, 30, { ok: true }],
    ['a letter with 16 combining marks (17 code points)', `a${'\u0301'.repeat(16)}`, 30, { ok: false, reason: 'character_too_long' }],
    // 16 code points a character, 30 characters: 480 code points, over the 240 of a title
    ['30 characters of 16 code points each', `a${'\u0301'.repeat(15)}`.repeat(30), 30, { ok: false, reason: 'too_many_code_points' }],
    ['15 characters of 16 code points each (240)', `a${'\u0301'.repeat(15)}`.repeat(15), 30, { ok: true }],
    ['CR LF counts once', '\r\n'.repeat(30), 30, { ok: true }],
    ['lone surrogates count alone', '\ud800'.repeat(30), 30, { ok: true }],
  ])('%s', (_name, text, max, verdict) => {
    expect(checkVisibleLength(text, max)).toEqual(verdict)
  })

  // the payloads of issue 11, each of which once stalled the whole API for seconds
  it.each([
    ['60,000 🎉 as a title', '🎉'.repeat(60_000), 30, 'too_many_characters'],
    ['40,000 👨‍👩‍👧 as a message', '👨‍👩‍👧'.repeat(40_000), 200, 'too_many_characters'],
    ['a target path of 250,000 characters', `/${'é'.repeat(249_999)}`, 500, 'too_many_characters'],
    ['30 letters each followed by 15,000 combining marks', `a${'\u0301'.repeat(15_000)}`.repeat(30), 30, 'character_too_long'],
  ])('refuses %s', (_name, text, max, reason) => {
    expect(checkVisibleLength(text, max)).toEqual({ ok: false, reason })
  })

  it('agrees with a full count on every text within the caps', () => {
    const pieces = ['\u200d\u200d\u200d\u200d\u200d', 'a', 'é', 'e\u0301', '🎉', '👨‍👩‍👧', '🇫🇷', '🇫', '\r\n', '\r', '日', '\u200d', '\ud800', '👍🏽', ' ']
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...pieces), { maxLength: 60 }), fc.integer({ min: 1, max: 40 }), (parts, max) => {
        const text = parts.join('')
        const verdict = checkVisibleLength(text, max)
        const longestCharacter = Math.max(0, ...[...segmenter.segment(text)].map(({ segment }) => [...segment].length))
        const within =
          visibleLength(text) <= max && [...text].length <= CODE_POINTS_PER_CHARACTER * max && longestCharacter <= MAX_CODE_POINTS_PER_CHARACTER
        expect(verdict.ok).toBe(within)
      }),
      { numRuns: 2_000 },
    )
  })
})
