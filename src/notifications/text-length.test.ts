import { describe, expect, it } from 'vitest'
import { visibleLength } from './text-length.js'

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
