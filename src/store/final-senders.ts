/**
 * The chain's senders of a day this process has made final in
 * `chain_daily_senders` (bulk-commit.ts), so the next batches leave them
 * out instead of asking the table again.
 *
 * A dense chain's day has a few tens of thousands of senders, and every
 * bulk batch meets most of them again: each was a primary-key lookup in the
 * aggregate statement (~17% of it on the dense bench, bench/LOG.md) to find
 * it already final. What this remembers cannot go stale: a member is
 * remembered only once the commit that made it final has committed, and a
 * final member never leaves (a final row is never removed; a tip rollback
 * takes out only its own counts, final-refs.ts). A member made final by
 * another process is not known here and is looked up as before.
 *
 * Bounded: the most recent `daysKept` days of each chain (a backfill moves
 * forward through days; the ranges in flight span one or two).
 */
export type FinalSenders = {
  has(chainId: number, day: string, sender: string): boolean
  /** Remembers the members of a committed batch: aligned columns `chain_id`, `day`, `sender`. */
  add(chainIds: readonly unknown[], days: readonly unknown[], senders: readonly unknown[]): void
}

const DAYS_KEPT = 3

export function createFinalSenders({ daysKept = DAYS_KEPT } = {}): FinalSenders {
  // per chain, per day (ISO date: ordered as text), the senders
  const chains = new Map<number, Map<string, Set<string>>>()

  function dayOf(chainId: number, day: string): Set<string> {
    let days = chains.get(chainId)
    if (!days) chains.set(chainId, (days = new Map()))
    let senders = days.get(day)
    if (!senders) {
      days.set(day, (senders = new Set()))
      if (days.size > daysKept) days.delete([...days.keys()].sort()[0]!)
    }
    return senders
  }

  return {
    has: (chainId, day, sender) => chains.get(chainId)?.get(day)?.has(sender) === true,
    add(chainIds, days, senders) {
      for (let i = 0; i < senders.length; i++) dayOf(chainIds[i] as number, days[i] as string).add(senders[i] as string)
    },
  }
}
