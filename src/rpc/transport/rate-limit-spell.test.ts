import { describe, expect, it } from 'vitest'
import { createRateLimitSpell } from './rate-limit-spell.js'

const QUIET = 30_000
const s = 1_000

describe('createRateLimitSpell', () => {
  it('lets one more request in flight be tried after a quiet spell since the last 429', () => {
    const spell = createRateLimitSpell({ quietMs: QUIET, longestMs: 8 * QUIET })
    spell.refused(1 * s)
    expect(spell.mayRaise(30 * s)).toBe(false)
    expect(spell.mayRaise(32 * s)).toBe(true)
    // the spell starts again from the raise
    expect(spell.mayRaise(40 * s)).toBe(false)
  })

  it('doubles the spell each time a raise is refused, up to the longest, so a fixed cap costs a pause less and less often', () => {
    const spell = createRateLimitSpell({ quietMs: QUIET, longestMs: 4 * QUIET })
    spell.refused(0)
    const raises: number[] = []
    // a provider whose cap is fixed: every raise is refused 2 s later
    for (let now = 0; now < 600 * s; now += 1 * s) {
      if (spell.mayRaise(now)) {
        raises.push(now / s)
        spell.refused(now + 2 * s)
        now += 2 * s
      }
    }
    // spells of 30, 60, 120, then 120 s (the longest) after each refusal
    expect(raises).toEqual([31, 94, 217, 340, 463, 586])
    expect(spell.spellMs).toBe(4 * QUIET)
  })

  it('goes back to the short spell once a raise lasts a whole spell (the provider takes more again)', () => {
    const spell = createRateLimitSpell({ quietMs: QUIET, longestMs: 8 * QUIET })
    spell.refused(0)
    expect(spell.mayRaise(31 * s)).toBe(true)
    spell.refused(33 * s)
    expect(spell.spellMs).toBe(2 * QUIET)
    expect(spell.mayRaise(94 * s)).toBe(true)
    // no 429 for a whole spell: the next raise comes after the short spell again
    expect(spell.mayRaise(155 * s)).toBe(true)
    expect(spell.spellMs).toBe(QUIET)
    expect(spell.mayRaise(186 * s)).toBe(true)
  })

  it('keeps the spell when a 429 comes long after the last raise (the provider got busier, not a refused raise)', () => {
    const spell = createRateLimitSpell({ quietMs: QUIET, longestMs: 8 * QUIET })
    expect(spell.mayRaise(0)).toBe(true)
    spell.refused(100 * s)
    expect(spell.spellMs).toBe(QUIET)
  })
})
