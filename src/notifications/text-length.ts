const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' })

/**
 * Length as a user counts it: one per grapheme cluster, so an emoji made of
 * several code points (👨‍👩‍👧, a flag, a skin tone) or a letter with a
 * combining accent counts as one character.
 */
export function visibleLength(text: string): number {
  // fast path: printable ASCII has one grapheme per UTF-16 unit (unlike CR LF, which is one)
  if (/^[\x20-\x7e]*$/.test(text)) return text.length
  let count = 0
  for (const _ of graphemes.segment(text)) count++
  return count
}
