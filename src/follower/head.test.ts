import { afterEach, describe, expect, it, vi } from 'vitest'
import { createTicker, targetOf } from './head.js'

afterEach(() => {
  vi.useRealTimers()
})

describe('targetOf', () => {
  it('is the head minus the confirmations', () => {
    expect(targetOf(100, 0)).toBe(100)
    expect(targetOf(100, 12)).toBe(88)
    expect(targetOf(5, 12)).toBe(-7)
  })
})

describe('createTicker', () => {
  /** A ticker of 1 s under fake timers and one wait on it, after `before` (if any). */
  function waitOnTicker(before?: (ticker: ReturnType<typeof createTicker>) => void) {
    vi.useFakeTimers()
    const ticker = createTicker(1_000)
    before?.(ticker)
    let done = false
    const waiting = ticker.wait().then(() => (done = true))
    return { ticker, waiting, done: () => done }
  }

  it('waits the interval', async () => {
    const wait = waitOnTicker()
    await vi.advanceTimersByTimeAsync(999)
    expect(wait.done()).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    await wait.waiting
    expect(wait.done()).toBe(true)
  })

  it('ends the wait at a wake', async () => {
    const wait = waitOnTicker()
    await vi.advanceTimersByTimeAsync(10)
    wait.ticker.wake()
    await wait.waiting
    expect(wait.done()).toBe(true)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('ends the next wait at once after a wake while no wait was under way (a head pushed during a tick)', async () => {
    const wait = waitOnTicker((ticker) => ticker.wake())
    await vi.advanceTimersByTimeAsync(0)
    expect(wait.done()).toBe(true)
    expect(wait.ticker.takeWake()).toBeGreaterThanOrEqual(0)
  })

  it('waits the whole interval again once the wake was taken by a tick', async () => {
    const wait = waitOnTicker((ticker) => {
      ticker.wake()
      expect(ticker.takeWake()).toBeGreaterThanOrEqual(0)
    })
    await vi.advanceTimersByTimeAsync(999)
    expect(wait.done()).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(wait.done()).toBe(true)
    expect(wait.ticker.takeWake()).toBeUndefined()
  })
})
