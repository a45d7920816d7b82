/**
 * The test kit's one polling helper. Every wait for the system to reach a
 * state goes through here, so a timeout always names what was awaited and,
 * where `describe` is given, the state the system was last seen in.
 */

export type PollOptions = {
  /** Gives up after this long (default 60 s: the slowest waits here are whole backfills). */
  timeoutMs?: number
  /** Pause between checks (default 50 ms). */
  intervalMs?: number
  /** Says where the system stood when the wait gave up (e.g. "indexed through 41"). */
  describe?: () => string | Promise<string>
}

type Found<T> = T | undefined | null | false

/**
 * Calls `check` until it returns something other than `undefined`, `null` or
 * `false`, and resolves to that value; fails with `what` after the timeout.
 * A check that throws fails the wait at once: an error is not a "not yet".
 */
export async function until<T>(what: string, check: () => Found<T> | Promise<Found<T>>, options: PollOptions = {}): Promise<T> {
  const { timeoutMs = 60_000, intervalMs = 50 } = options
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const found = await check()
    if (found !== undefined && found !== null && found !== false) return found
    if (Date.now() > deadline) {
      const state = options.describe ? ` (${await options.describe()})` : ''
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${state}`)
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}
