/**
 * When a transport capped by a 429 may try one more request in flight.
 *
 * After a 429 the requests in flight are capped below what was refused;
 * after a quiet spell the cap is raised by one, since providers change
 * their limits and a busy spell passes. But a provider whose cap is fixed
 * refuses that raise every time, and each refusal holds the refused calls
 * back for its `Retry-After` (a second, on the bench's capped remote node)
 * and costs them an attempt. So a raise refused within the spell after it
 * doubles the spell, up to `longestMs`; a raise that lasts a whole spell
 * brings it back to `quietMs`. It also tells a first refusal (one request
 * more than the node takes) from one met again at the cap it set (a rate
 * limit, for which the transport pauses every request).
 */
export function createRateLimitSpell(options: { quietMs: number; longestMs: number }) {
  let spellMs = options.quietMs
  let refusedAt = Number.NEGATIVE_INFINITY
  let raisedAt: number | undefined
  /** When the 429 that set the cap came back. */
  let capSetAt = Number.NEGATIVE_INFINITY

  return {
    /**
     * A 429 arrived at `now`, to a request sent at `sentAt`. Returns whether
     * it was met at the cap an earlier one set: the request went out after
     * that refusal came back, within a quiet spell of it. Requests already
     * out when it came back were sent before the cap dropped: their
     * refusals are the same burst.
     */
    refused(now: number, sentAt = now): boolean {
      const atTheCap = sentAt > capSetAt && now - capSetAt < options.quietMs
      if (sentAt > capSetAt) capSetAt = now
      if (raisedAt !== undefined && now - raisedAt <= spellMs) spellMs = Math.min(spellMs * 2, options.longestMs)
      raisedAt = undefined
      refusedAt = now
      return atTheCap
    },
    /** Whether one more request in flight may be tried at `now`; true means the caller raises its cap now. */
    mayRaise(now: number): boolean {
      if (now - refusedAt <= spellMs) return false
      // the last raise lasted a whole spell: the provider takes it
      if (raisedAt !== undefined) spellMs = options.quietMs
      raisedAt = now
      refusedAt = now
      return true
    },
    /** The quiet time now asked before the next raise. */
    get spellMs() {
      return spellMs
    },
  }
}
