import { describe, expect, it } from 'vitest'
import { createBatchCaps } from './batch-caps.js'

/** Drives the learner like the transport does against a node that breaks batches over `limit`: a batch too long breaks, the rest is served. */
function sendAgainst(caps: ReturnType<typeof createBatchCaps>, limit: number, wanted: number, batches: number): number[] {
  const sizes: number[] = []
  for (let i = 0; i < batches; i++) {
    const size = Math.min(wanted, caps.capFor('m'))
    sizes.push(size)
    if (size > limit) {
      caps.broke('m', size)
      // the transport's halves
      caps.served('m', Math.floor(size / 2) <= limit ? Math.floor(size / 2) : 1)
    } else caps.served('m', size)
  }
  return sizes
}

describe('caps learned from batches that break without naming a limit', () => {
  it('learns nothing from one break: it may be bad luck', () => {
    const caps = createBatchCaps()
    expect(caps.broke('m', 50)).toBeUndefined()
    expect(caps.capFor('m')).toBe(Number.POSITIVE_INFINITY)
  })

  it('a second break before that length is served sets a cap: the longest served, or half', () => {
    const caps = createBatchCaps()
    caps.broke('m', 50)
    expect(caps.broke('m', 50)).toBe(25)
    caps.served('m', 12)
    expect(caps.broke('m', 25)).toBe(12)
    expect(caps.capFor('m')).toBe(12)
    // another method is not concerned
    expect(caps.capFor('other')).toBe(Number.POSITIVE_INFINITY)
  })

  it('forgets a break once a batch that long is served', () => {
    const caps = createBatchCaps()
    caps.broke('m', 50)
    caps.served('m', 50)
    expect(caps.broke('m', 50)).toBeUndefined()
    expect(caps.capFor('m')).toBe(Number.POSITIVE_INFINITY)
  })

  it('ignores a break of a batch shorter than one served since', () => {
    const caps = createBatchCaps()
    caps.broke('m', 50)
    caps.served('m', 40)
    expect(caps.broke('m', 30)).toBeUndefined()
  })

  it('single calls teach nothing: they are how the transport tells a dead node', () => {
    const caps = createBatchCaps()
    caps.broke('m', 50)
    caps.served('m', 1)
    expect(caps.broke('m', 50)).toBe(25)
  })

  it('bisects up to the longest length the node serves, and breaks ever more rarely there', () => {
    const caps = createBatchCaps({ retryAfter: 4 })
    const sizes = sendAgainst(caps, 20, 50, 2_000)
    expect(Math.max(...sizes.slice(-500).filter((size) => size <= 20))).toBe(20)
    const late = sizes.slice(-1_000)
    // tries at 21 grow rarer as patience doubles (to at most 1 in 1024)
    expect(late.filter((size) => size > 20).length).toBeLessThanOrEqual(2)
  })
})
