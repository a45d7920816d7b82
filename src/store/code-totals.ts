import { and, asc, eq, gte, lte, type SQL } from 'drizzle-orm'
import type { Database, Sql } from '../db/client.js'
import { ANY_REGISTRY, codeDailyTotals } from '../db/schema/index.js'
import { historySenders } from './history-days.js'
import { CODE_SENDER_WINDOW, scopeOf, type RollingWindows } from './rolling-windows.js'

/**
 * Reads of one code's aggregates: its daily and hourly totals and its
 * distinct senders. Each is an indexed range read of rows kept by the
 * commit (commit.ts), never a scan of attribution rows.
 */

/** Which of a code's rows: one chain or all, one registry namespace or all. */
export type CodeScope = { code: string; chainId?: number | undefined; registry?: string | undefined }

export type CodeDailyRow = {
  chainId: number
  day: string
  kind: 'transaction' | 'userOperation'
  successCount: number
  revertedCount: number
  suffixGas: number
}

/** The code's `code_daily_totals` rows over the days `from`…`to` (inclusive), one per chain, day, kind and registry. */
export async function codeDailyRows(db: Database, query: CodeScope & { from: string; to: string }): Promise<CodeDailyRow[]> {
  const conditions: SQL[] = [eq(codeDailyTotals.code, query.code), gte(codeDailyTotals.day, query.from), lte(codeDailyTotals.day, query.to)]
  if (query.chainId !== undefined) conditions.push(eq(codeDailyTotals.chainId, query.chainId))
  if (query.registry !== undefined) conditions.push(eq(codeDailyTotals.registry, query.registry))
  return db
    .select({
      chainId: codeDailyTotals.chainId,
      day: codeDailyTotals.day,
      kind: codeDailyTotals.kind,
      successCount: codeDailyTotals.successCount,
      revertedCount: codeDailyTotals.revertedCount,
      suffixGas: codeDailyTotals.suffixGas,
    })
    .from(codeDailyTotals)
    .where(and(...conditions))
    .orderBy(asc(codeDailyTotals.chainId))
}

/**
 * Exact distinct senders per day (kept counted in `code_daily_sender_counts`)
 * and over the days `from`…`to`. `rolling30d` reads the last 30 days kept
 * ready as a rolling window (moved to `now` first); any other window is
 * counted over `code_day_sender_refs`, in the one scope the filters name, so
 * it costs the code's senders per day — and, on a history day (no member
 * rows: history-days.ts), its rows.
 */
export async function codeSenderCounts(
  windows: RollingWindows,
  query: CodeScope & { from: string; to: string; rolling30d: boolean; now: Date },
): Promise<{ perDay: Array<{ day: string; count: number }>; overall: number }> {
  const { sql } = windows
  const registry = query.registry ?? ANY_REGISTRY
  const chainId = scopeOf(sql, query.chainId)
  const scope = sql`code = ${query.code} and registry = ${registry} and chain_id = ${chainId}`
  const [perDay, [overall]] = await Promise.all([
    sql<{ day: string; count: number }[]>`
      select day::text as day, senders::int as count from code_daily_sender_counts
      where ${scope} and day between ${query.from} and ${query.to}`,
    query.rolling30d
      ? windows.ensureCurrent(query.now).then(
          () => sql<{ count: number }[]>`
            select coalesce(sum(senders), 0)::int as count from code_sender_window_counts where window_name = ${CODE_SENDER_WINDOW} and ${scope}`,
        )
      : sql<{ count: number }[]>`
          select count(distinct sender)::int as count from (
            select sender from code_day_sender_refs
            where code = ${query.code} and day between ${query.from} and ${query.to} and (refs ->> (${registry} || '|' || ${chainId}))::bigint > 0
            union all
            ${historySenders(sql, { code: query.code, registry, chainId: query.chainId, from: query.from, to: query.to })}
          ) as senders`,
  ])
  return { perDay, overall: overall!.count }
}

export type HourSums = { hour: number; transactions: number; userOperations: number; reverted: number }

/** The code's hourly totals since `from`, summed per hour (ms since the epoch) in the database: one row per active hour crosses the wire. */
export function codeHourlySums(sql: Sql, query: CodeScope & { from: Date }): Promise<HourSums[]> {
  return sql<HourSums[]>`
    select extract(epoch from hour)::float8 * 1000 as hour,
      coalesce(sum(success_count) filter (where kind = 'transaction'), 0)::float8 as transactions,
      coalesce(sum(success_count) filter (where kind = 'userOperation'), 0)::float8 as "userOperations",
      sum(reverted_count)::float8 as reverted
    from code_hourly_totals
    where code = ${query.code} and hour >= ${query.from.toISOString()}::timestamptz
      ${query.chainId === undefined ? sql`` : sql`and chain_id = ${query.chainId}`}
      ${query.registry === undefined ? sql`` : sql`and registry = ${query.registry}`}
    group by 1`
}
