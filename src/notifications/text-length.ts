const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' })

/**
 * Text limits as users count: one per grapheme cluster, so an emoji made of
 * several code points (👨‍👩‍👧, a flag, a skin tone) or a letter with a
 * combining accent counts as one character.
 *
 * Counting grapheme clusters is not linear in V8 (60,000 "🎉" took 11.7 s
 * and stalled every other request), so a check never segments more than a
 * window of the first `CODE_POINTS_PER_CHARACTER × max` code points,
 * whatever the input holds. Two caps make the window sufficient and refuse
 * text no user would type:
 *
 * - at most `CODE_POINTS_PER_CHARACTER` (8) code points per allowed
 *   character over the whole text, on average (a 30-character title holds at
 *   most 240: thirty 👨‍👩‍👧‍👦 of 7 code points each fit);
 * - at most `MAX_CODE_POINTS_PER_CHARACTER` (16) code points in any one
 *   character: the longest emoji sequences in use (families, tag flags) take
 *   7, while "Zalgo" text stacks thousands of combining marks on one letter.
 */
export const CODE_POINTS_PER_CHARACTER = 8
export const MAX_CODE_POINTS_PER_CHARACTER = 16

export type TextLengthVerdict =
  | { ok: true }
  | { ok: false; reason: 'too_many_characters' | 'too_many_code_points' | 'character_too_long' }

const OK: TextLengthVerdict = { ok: true }

/** Code points of `text` from `start` up to `end` (UTF-16 indexes), counting a surrogate pair once. */
function codePointsIn(text: string, start: number, end: number): number {
  let count = 0
  for (let i = start; i < end; i++) {
    const unit = text.charCodeAt(i)
    // a high surrogate followed by a low one is one code point; lone surrogates count alone
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < end) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) i++
    }
    count++
  }
  return count
}

/** UTF-16 end of the first `codePoints` code points of `text` (or its length when it has fewer). */
function prefixEnd(text: string, codePoints: number): number {
  let i = 0
  for (let seen = 0; seen < codePoints && i < text.length; seen++) {
    const unit = text.charCodeAt(i)
    i += unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1
  }
  return i
}

/**
 * Whether `text` fits in `max` characters under the rules above, at a cost
 * bounded by `max` (never by the length of `text`).
 */
export function checkVisibleLength(text: string, max: number): TextLengthVerdict {
  // printable ASCII: one character per UTF-16 unit (unlike CR LF, which is one), nothing to segment
  if (text.length <= max && /^[\x20-\x7e]*$/.test(text)) return OK
  const maxCodePoints = CODE_POINTS_PER_CHARACTER * max
  // one code point past the cap tells "over the cap" from "exactly at it"
  const windowEnd = prefixEnd(text, maxCodePoints + 1)
  const window = text.slice(0, windowEnd)
  if (/^[\x20-\x7e]*$/.test(window)) return window.length > max ? { ok: false, reason: 'too_many_characters' } : OK
  let characters = 0
  // Boundaries inside a prefix are those of the whole text (the rules look at
  // neighbours and what precedes), so k segments in the window mean at least k
  // in the text, and a character's code points in the window are a lower bound.
  for (const { index, segment } of graphemes.segment(window)) {
    if (codePointsIn(window, index, index + segment.length) > MAX_CODE_POINTS_PER_CHARACTER) return { ok: false, reason: 'character_too_long' }
    if (++characters > max) return { ok: false, reason: 'too_many_characters' }
  }
  if (codePointsIn(window, 0, windowEnd) > maxCodePoints) return { ok: false, reason: 'too_many_code_points' }
  return OK
}

/** The message a 400 gives for a verdict, after the field name. */
export function textLengthMessage(reason: Exclude<TextLengthVerdict, { ok: true }>['reason'], max: number): string {
  switch (reason) {
    case 'too_many_characters':
      return `must be at most ${max} characters`
    case 'too_many_code_points':
      return `must be at most ${CODE_POINTS_PER_CHARACTER * max} code points (${CODE_POINTS_PER_CHARACTER} per character of the ${max} allowed)`
    case 'character_too_long':
      return `holds a character made of more than ${MAX_CODE_POINTS_PER_CHARACTER} code points`
  }
}

/**
 * Length as a user counts it (grapheme clusters) of a short text. Costs
 * what the text holds: for untrusted input use checkVisibleLength.
 */
export function visibleLength(text: string): number {
  if (/^[\x20-\x7e]*$/.test(text)) return text.length
  let count = 0
  for (const _ of graphemes.segment(text)) count++
  return count
}
