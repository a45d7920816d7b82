/**
 * Caps on batch length learned from batches that broke without naming a
 * limit: the connection dropped, the answer was cut short or unreadable,
 * an HTML 502 from a proxy in front of the node. Nothing in such an answer
 * says "too many calls", so the transport finds out by splitting: if the
 * halves go through where the whole did not, batches that long are what
 * the node (or its proxy) cannot serve. A whole batch that timed out is
 * counted the same way: on a node slow per call, its length is the cause.
 *
 * One failure is no proof (any request can meet a reset), so a cap is only
 * learned when a second batch at least as long breaks before one that long
 * has gone through. The cap is then the longest batch seen to go through
 * (or half the broken one), and it is raised again by bisection towards the
 * broken length after a run of clean batches at the cap: a proxy that
 * breaks past 20 calls ends at 20, and a fault that was bad luck costs a
 * few batches at a smaller size, not a cap for good. Pure: per key (a
 * method, or a kind of call), no clock, no I/O.
 */
export type BatchCapOptions = {
  /** Clean batches at the cap before a longer one is tried again. */
  retryAfter?: number
}

type CapState = {
  /** The shortest batch that broke and has not been served since. */
  brokeAt: number
  /** The longest batch (more than one call) served since it broke. */
  longestServed: number
  /** The learned cap, or +Infinity while one break is not yet proof. */
  cap: number
  cleanAtCap: number
  /** Clean batches before the next longer try; doubles at each break, so a hard limit is tried ever more rarely. */
  patience: number
}

export function createBatchCaps(options: BatchCapOptions = {}) {
  const retryAfter = options.retryAfter ?? 16
  const states = new Map<string, CapState>()

  /** The most calls a batch of `key` may carry (+Infinity when nothing broke). */
  function capFor(key: string): number {
    return states.get(key)?.cap ?? Number.POSITIVE_INFINITY
  }

  /** A batch of `size` calls went through. */
  function served(key: string, size: number): void {
    const state = states.get(key)
    if (!state || size < 2) return
    if (size >= state.brokeAt) {
      // the length that broke is served now: whatever it was has passed
      states.delete(key)
      return
    }
    state.longestServed = Math.max(state.longestServed, size)
    if (size < state.cap || ++state.cleanAtCap < state.patience) return
    state.cleanAtCap = 0
    // bisect towards the length that broke; at one below it, try that length itself
    state.cap = state.cap >= state.brokeAt - 1 ? state.brokeAt : Math.ceil((state.cap + state.brokeAt) / 2)
  }

  /**
   * A batch of `size` calls broke (and a single call went through, so the
   * node is up). Returns the cap when this break lowered it.
   */
  function broke(key: string, size: number): number | undefined {
    if (size < 2) return undefined
    const state = states.get(key)
    if (!state) {
      states.set(key, { brokeAt: size, longestServed: 0, cap: Number.POSITIVE_INFINITY, cleanAtCap: 0, patience: retryAfter / 2 })
      return undefined
    }
    // a longer batch went through since: this break is bad luck, not length
    if (state.longestServed >= size) return undefined
    state.brokeAt = Math.min(state.brokeAt, size)
    const cap = Math.max(1, Math.min(size - 1, state.longestServed > 1 ? state.longestServed : Math.floor(size / 2)))
    state.cleanAtCap = 0
    if (cap >= state.cap) return undefined
    state.cap = cap
    state.patience = Math.min(1024, state.patience * 2)
    return cap
  }

  return { capFor, served, broke }
}

export type BatchCaps = ReturnType<typeof createBatchCaps>
