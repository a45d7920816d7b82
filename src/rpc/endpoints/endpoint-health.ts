/**
 * Whether an endpoint gets work. A failed work (the transport already spent
 * its attempts on it: errors, timeouts, a storm of 429s) makes the endpoint
 * sick: the router goes around it for a cool-down that doubles with each
 * failure in a row (1 s up to 60 s). When the cool-down is over, one probe
 * (a cheap call, never a range's work) decides: an answer makes it healthy
 * again, a failure starts the next, longer cool-down. "The node does not have
 * that block yet" is lag, not sickness: it never counts here.
 */

const FIRST_COOLDOWN_MS = 1_000
const LONGEST_COOLDOWN_MS = 60_000

export type HealthState = 'healthy' | 'sick' | 'probing'

export function createEndpointHealth(now: () => number = Date.now) {
  let state: HealthState = 'healthy'
  let failuresInRow = 0
  let retryAt = 0
  let lastError: string | undefined

  return {
    get state(): HealthState {
      return state
    },
    get lastError() {
      return lastError
    },
    get failuresInRow() {
      return failuresInRow
    },
    /** Whether work may go here now. */
    usable(): boolean {
      return state === 'healthy'
    },
    /** Whether the cool-down is over and a probe should be sent (at most one at a time). */
    probeDue(): boolean {
      return state === 'sick' && now() >= retryAt
    },
    probing(): void {
      state = 'probing'
    },
    succeeded(): void {
      state = 'healthy'
      failuresInRow = 0
    },
    failed(message: string): void {
      lastError = message
      // works already under way when it fell sick fail too: one outage, not several failures in a row
      if (state === 'sick') return
      failuresInRow++
      state = 'sick'
      retryAt = now() + Math.min(LONGEST_COOLDOWN_MS, FIRST_COOLDOWN_MS * 2 ** (failuresInRow - 1))
    },
  }
}

export type EndpointHealth = ReturnType<typeof createEndpointHealth>
