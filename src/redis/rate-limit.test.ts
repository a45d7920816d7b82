import { describe, expect, it } from 'vitest'
import { createLocalWindows } from './rate-limit.js'

describe('createLocalWindows (the limiter while Redis is down)', () => {
  it('admits max requests per client per window, then refuses until the window ends', () => {
    let now = 1_000
    const windows = createLocalWindows({ max: 2, windowMs: 10_000, now: () => now })
    expect([windows.hit('a'), windows.hit('a'), windows.hit('a')].map((decision) => decision.allowed)).toEqual([true, true, false])
    expect(windows.hit('a')).toEqual({ allowed: false, counted: true, limit: 2, remaining: 0, resetMs: 10_000 })
    expect(windows.hit('b').allowed).toBe(true)
    now += 9_999
    expect(windows.hit('a')).toMatchObject({ allowed: false, resetMs: 1 })
    now += 1
    expect(windows.hit('a')).toEqual({ allowed: true, counted: true, limit: 2, remaining: 1, resetMs: 10_000 })
  })

  it('remembers at most maxClients clients, forgetting the one counted longest ago', () => {
    const windows = createLocalWindows({ max: 1, windowMs: 60_000, maxClients: 3, now: () => 0 })
    for (const client of ['a', 'b', 'c', 'd']) windows.hit(client)
    expect(windows.size()).toBe(3)
    // a was forgotten, so it is admitted again; d is still counted
    expect(windows.hit('a').allowed).toBe(true)
    expect(windows.hit('d').allowed).toBe(false)
  })
})
