import type { Sql } from '../db/client.js'
import { dayOf } from './buckets.js'

/**
 * Reads of the whole index's aggregates per chain (`chain_daily_totals`,
 * `chain_hourly_totals`): attribution rows and distinct attributed
 * transactions and UserOperations, kept by the commit.
 */

/** Attribution rows, and distinct successful transactions, UserOperations and failed ones of both kinds. */
export type ActivitySums = { attributions: number; transactions: number; userOperations: number; reverted: number }

const chainFilter = (sql: Sql, chainId: number | undefined) => (chainId === undefined ? sql`true` : sql`chain_id = ${chainId}`)

const sumsOf = (sql: Sql) => sql`
  sum(attributions)::float8 as attributions,
  coalesce(sum(success_count) filter (where kind = 'transaction'), 0)::float8 as transactions,
  coalesce(sum(success_count) filter (where kind = 'userOperation'), 0)::float8 as "userOperations",
  sum(reverted_count)::float8 as reverted`

/** The first UTC day anything was indexed on (one chain, or any); null before anything is. */
export async function earliestIndexedDay(sql: Sql, chainId: number | undefined): Promise<string | null> {
  const [row] = await sql<{ day: string | null }[]>`select min(day)::text as day from chain_daily_totals where ${chainFilter(sql, chainId)}`
  return row?.day ?? null
}

/**
 * The sums of every hour or UTC day bucket from `since` on, keyed by the
 * bucket's start (ms since the epoch), summed per bucket in the database:
 * one row per bucket crosses the wire, not one per chain and kind.
 */
export function activityByBucket(
  sql: Sql,
  query: { granularity: 'hour' | 'day'; since: Date; chainId: number | undefined },
): Promise<Array<ActivitySums & { start: number }>> {
  const hourly = query.granularity === 'hour'
  return sql<Array<ActivitySums & { start: number }>>`
    select extract(epoch from ${hourly ? sql`hour` : sql`(day::timestamp at time zone 'UTC')`})::float8 * 1000 as start, ${sumsOf(sql)}
    from ${hourly ? sql`chain_hourly_totals` : sql`chain_daily_totals`}
    where ${chainFilter(sql, query.chainId)}
      and ${hourly ? sql`hour >= ${query.since.toISOString()}::timestamptz` : sql`day >= ${dayOf(query.since)}`}
    group by 1`
}

/** Everything indexed (one chain, or all); undefined before anything is. */
export async function activityEver(sql: Sql, chainId: number | undefined): Promise<ActivitySums | undefined> {
  const [row] = await sql<ActivitySums[]>`select ${sumsOf(sql)} from chain_daily_totals where ${chainFilter(sql, chainId)} having count(*) > 0`
  return row
}
