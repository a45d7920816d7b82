import type postgres from 'postgres'

type Sql = postgres.Sql | postgres.TransactionSql | postgres.ReservedSql

/**
 * How finalized rows count in the distinct-sender tables (issue 40.2).
 *
 * The tip path keeps exact reference counts (scope-refs.ts): a member of a
 * scope (a code's sender on a day, a window's sender…) counts while its
 * rows there are above 0, because a reorg may take any of them out again.
 * A finalized row is never taken out, so the bulk path needs no count, only
 * presence: it adds FINAL_REFS once to each scope a final row puts a member
 * in (a first-seen set kept in the same rows), and a member already final
 * there costs a read, not a write. A tip commit or rollback then moves the
 * value by its own rows, never below FINAL_REFS: the member stays counted
 * while a final row holds it, and every read (`> 0`) works on the same
 * tables unchanged. A window that moves is taken out the days it leaves by
 * their members, so it holds their sum instead: a day member made final
 * adds FINAL_REFS to it once per day (bulk-commit.ts movingWindowCtes); only
 * the all-time windows, which never move, hold presence.
 *
 * FINAL_REFS is far above any count of tip rows (2^40), so "already final
 * there" is `value >= FINAL_REFS`, and a bigint holds it summed over
 * millions of days.
 */
export const FINAL_REFS = 2 ** 40

/**
 * The bulk path decides "already final" and "newly counted" from what its
 * statement reads, so nothing else may write these tables meanwhile: tip
 * commits and rollbacks hold this lock shared (they run side by side as
 * before), a bulk commit holds it alone. Bulk commits run while catching
 * up, so the tip waits for one only then.
 */
const REFS_WRITERS = "hashtextextended('attribution_refs_writers', 0)"

/** Each sent at once (`execute`), not when awaited: pipelined with a transaction's next queries, it goes out first (bulk-commit.ts). */
export function shareRefsWriters(sql: Sql): Promise<unknown> {
  return sql`select pg_advisory_xact_lock_shared(${sql.unsafe(REFS_WRITERS)})`.execute()
}

export function holdRefsWritersAlone(sql: Sql): Promise<unknown> {
  return sql`select pg_advisory_xact_lock(${sql.unsafe(REFS_WRITERS)})`.execute()
}
