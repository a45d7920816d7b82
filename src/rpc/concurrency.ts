import { setTimeout as sleep } from 'node:timers/promises'

/**
 * How many requests are in flight to one node, adapted AIMD-style: one more
 * after a run of answers that came back well within the timeout, half as many
 * on a 429 (and nothing at all until its Retry-After has passed), on a timeout
 * or on an answer slow enough to risk one.
 */
export type ConcurrencyOptions = {
  initial: number
  max: number
  /** An answer slower than this counts as a warning (a quarter of the timeout, say). */
  slowMs: number
  onChange?: (inFlight: number, limit: number) => void
}

export function createConcurrencyLimiter(options: ConcurrencyOptions) {
  let limit = Math.min(options.initial, options.max)
  let inFlight = 0
  let pausedUntil = 0
  let goodInARow = 0
  const waiting: Array<() => void> = []

  const changed = () => options.onChange?.(inFlight, limit)

  let recheck: NodeJS.Timeout | undefined

  /**
   * Lets queued requests go while there is room. During a pause it looks
   * again when the pause ends, by its own timer: a release may not come (none
   * in flight), and a timer set for the pause's end can fire while Date.now()
   * still reads a moment before it (timers and the wall clock drift apart).
   */
  function wakeWaiters() {
    const pauseLeft = pausedUntil - Date.now()
    if (pauseLeft > 0) {
      if (waiting.length > 0 && !recheck) {
        recheck = setTimeout(() => {
          recheck = undefined
          wakeWaiters()
        }, pauseLeft)
        recheck.unref()
      }
    } else {
      while (inFlight < limit && waiting.length > 0) {
        inFlight++
        waiting.shift()!()
      }
    }
    changed()
  }

  async function acquire(): Promise<void> {
    while (Date.now() < pausedUntil) await sleep(pausedUntil - Date.now())
    if (inFlight < limit && waiting.length === 0) {
      inFlight++
      changed()
      return
    }
    await new Promise<void>((resolve) => waiting.push(resolve))
  }

  function release() {
    inFlight--
    wakeWaiters()
  }

  function decrease() {
    goodInARow = 0
    limit = Math.max(1, Math.floor(limit / 2))
  }

  return {
    /** Runs `request` once a slot is free. */
    async run<T>(request: () => Promise<T>): Promise<T> {
      await acquire()
      try {
        return await request()
      } finally {
        release()
      }
    },
    answered(ms: number) {
      if (ms > options.slowMs) return decrease()
      if (++goodInARow >= limit && limit < options.max) {
        limit++
        goodInARow = 0
        wakeWaiters()
      }
    },
    rateLimited(retryAfterMs: number | undefined) {
      decrease()
      if (retryAfterMs !== undefined) pausedUntil = Math.max(pausedUntil, Date.now() + retryAfterMs)
      // a waiter released after the pause must be woken even if nothing completes meanwhile
      wakeWaiters()
    },
    timedOut: decrease,
    get limit() {
      return limit
    },
    get inFlight() {
      return inFlight
    },
  }
}

export type ConcurrencyLimiter = ReturnType<typeof createConcurrencyLimiter>
