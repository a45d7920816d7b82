import { setTimeout as sleep } from 'node:timers/promises'

/**
 * How many requests are in flight to one node. The limit is set by the
 * operating-point search (operating-point.ts) from measured throughput;
 * here it is only enforced, halved at once on a timeout before the
 * search's next window looks again. A 429 met at the cap an earlier one set
 * (transport.ts) pauses every request until its Retry-After has passed; the
 * limit after a 429 is the search's, one below the
 * requests the node refused (transport.ts): halved here too, it stayed under
 * that cap until the search next moved, which with large batches could be
 * the rest of a backfill.
 */
export type ConcurrencyOptions = {
  initial: number
  max: number
  onChange?: (inFlight: number, limit: number) => void
}

export function createConcurrencyLimiter(options: ConcurrencyOptions) {
  let limit = Math.min(options.initial, options.max)
  let inFlight = 0
  let pausedUntil = 0
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
    limit = Math.max(1, Math.floor(limit / 2))
    changed()
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
    /** The search's limit (at most the configured most). */
    setLimit(next: number) {
      limit = Math.max(1, Math.min(options.max, next))
      wakeWaiters()
    },
    rateLimited(retryAfterMs: number | undefined) {
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
