import { describe, expect, it } from 'vitest'
import { createFinalSenders } from './final-senders.js'

describe('the senders a process made final', () => {
  it('knows a member by chain, day and sender, and nothing else', () => {
    const known = createFinalSenders()
    known.add([8453, 8453, 10], ['2026-01-01', '2026-01-01', '2026-01-01'], ['0xa', '0xb', '0xa'])
    expect(known.has(8453, '2026-01-01', '0xa')).toBe(true)
    expect(known.has(10, '2026-01-01', '0xa')).toBe(true)
    expect(known.has(10, '2026-01-01', '0xb')).toBe(false)
    expect(known.has(8453, '2026-01-02', '0xa')).toBe(false)
  })

  it('keeps the most recent days of each chain: an older day forgotten is asked again, never wrongly known', () => {
    const known = createFinalSenders({ daysKept: 2 })
    for (const day of ['2026-01-03', '2026-01-01', '2026-01-02']) known.add([1], [day], ['0xa'])
    expect(known.has(1, '2026-01-01', '0xa')).toBe(false)
    expect(known.has(1, '2026-01-02', '0xa')).toBe(true)
    expect(known.has(1, '2026-01-03', '0xa')).toBe(true)
    // a late range of a day older than every kept one: not kept
    known.add([1], ['2025-12-31'], ['0xb'])
    expect(known.has(1, '2025-12-31', '0xb')).toBe(false)
  })
})
