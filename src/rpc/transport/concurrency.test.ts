import { afterEach, describe, expect, it, vi } from 'vitest'
import { createConcurrencyLimiter } from './concurrency.js'

afterEach(() => {
  vi.useRealTimers()
})

describe('createConcurrencyLimiter', () => {
  it('runs a request that queued during a Retry-After pause once the pause ends, even when the timer fires a moment before the wall clock reaches it', async () => {
    vi.useFakeTimers({ now: 1_000_000 })
    const limiter = createConcurrencyLimiter({ initial: 1, max: 1 })
    // one request in flight and a second queued behind it
    let finishFirst!: () => void
    const first = limiter.run(() => new Promise<void>((resolve) => (finishFirst = resolve)))
    let ran = false
    const second = limiter.run(async () => {
      ran = true
    })
    await vi.advanceTimersByTimeAsync(0)
    // the first is answered 429 with Retry-After: 1 s and ends during the pause (its release wakes no one yet)
    limiter.rateLimited(1_000)
    finishFirst()
    await first
    expect(ran).toBe(false)
    // the wall clock steps back 3 ms just before the wake-up timer fires (timers run on a monotonic
    // clock, Date.now() on the system's, which NTP adjusts): it fires with the pause not over by Date.now()
    await vi.advanceTimersByTimeAsync(999)
    vi.setSystemTime(1_000_000 + 996)
    await vi.advanceTimersByTimeAsync(1)
    expect(ran).toBe(false)
    // nothing else is in flight to release and wake it: the limiter itself must look again when the pause ends
    await vi.advanceTimersByTimeAsync(100)
    expect(ran).toBe(true)
    await second
    expect(limiter.inFlight).toBe(0)
  })
})
