import { and, asc, eq, gte, lte, type SQL } from 'drizzle-orm'
import type { Database, Sql } from '../db/client.js'
import { ANY_REGISTRY, codeDailyTotals, EVERY_CHAIN } from '../db/schema/index.js'
import { CODE_SENDER_WINDOW, ensureWindowsCurrent } from './rolling-windows.js'
import { dayOf, daysOf, DEFAULT_WINDOW_DAYS, firstDayOf, firstHourOf24h, HOUR_MS, type DayWindow } from './window.js'

/** Successful transactions and UserOperations, their sum, the failed ones of both kinds, and suffix gas. */
export type Totals = { transactions: number; userOperations: number; total: number; reverted: number; suffixGas: number }
export type ChainTotals = Totals & { chainId: number }
/** `uniqueSenders`: exact distinct senders of the code that day (transaction `from`, UserOperation `sender`). */
export type DailyPoint = { day: string; transactions: number; userOperations: number; uniqueSenders: number }

/** `uniqueSenders`: exact distinct senders over the whole window. */
export type CodeStats = { totals: Totals; uniqueSenders: number; byChain: ChainTotals[]; daily: DailyPoint[] }

type DailyRow = {
  chainId: number
  day: string
  kind: 'transaction' | 'userOperation'
  successCount: number
  revertedCount: number
  suffixGas: number
}

const emptyTotals = (): Totals => ({ transactions: 0, userOperations: 0, total: 0, reverted: 0, suffixGas: 0 })

function addRow(totals: Totals, row: DailyRow) {
  if (row.kind === 'transaction') totals.transactions += row.successCount
  else totals.userOperations += row.successCount
  totals.total += row.successCount
  totals.reverted += row.revertedCount
  totals.suffixGas += row.suffixGas
}

/**
 * Totals, per-chain totals and the zero-filled daily series of one code over
 * a window, read from `code_daily_totals` only. The table holds one row per
 * (code, chain, day, kind), so one indexed range read gives every number.
 */
export async function readCodeStats(
  db: Database,
  query: { code: string; window: DayWindow; chainId?: number; registry?: string; now?: Date },
): Promise<CodeStats> {
  const conditions: SQL[] = [
    eq(codeDailyTotals.code, query.code),
    gte(codeDailyTotals.day, query.window.from),
    lte(codeDailyTotals.day, query.window.to),
  ]
  if (query.chainId !== undefined) conditions.push(eq(codeDailyTotals.chainId, query.chainId))
  if (query.registry !== undefined) conditions.push(eq(codeDailyTotals.registry, query.registry))
  const senders = readCodeSenders(db.$client, query)
  // awaited below; marked handled now so a failing totals query (Postgres down) cannot leave it an unhandled rejection that ends the process
  senders.catch(() => {})
  const rows: DailyRow[] = await db
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

  const totals = emptyTotals()
  const byChain = new Map<number, ChainTotals>()
  const daily = new Map<string, DailyPoint>(daysOf(query.window).map((day) => [day, { day, transactions: 0, userOperations: 0, uniqueSenders: 0 }]))
  for (const row of rows) {
    addRow(totals, row)
    let chain = byChain.get(row.chainId)
    if (!chain) byChain.set(row.chainId, (chain = { chainId: row.chainId, ...emptyTotals() }))
    addRow(chain, row)
    const point = daily.get(row.day)
    if (!point) continue
    if (row.kind === 'transaction') point.transactions += row.successCount
    else point.userOperations += row.successCount
  }
  const { perDay, overall } = await senders
  for (const row of perDay) {
    const point = daily.get(row.day)
    if (point) point.uniqueSenders = row.count
  }
  return { totals, uniqueSenders: overall, byChain: [...byChain.values()], daily: [...daily.values()] }
}

/**
 * Exact distinct senders per day (kept counted in `code_daily_sender_counts`)
 * and over the window: the default window (the last 30 days) is kept ready
 * as a rolling window; any other is counted over `code_daily_senders`, in
 * the one scope the filters name, so it costs the code's senders per day.
 */
async function readCodeSenders(sql: Sql, query: { code: string; window: DayWindow; chainId?: number; registry?: string; now?: Date }) {
  const now = query.now ?? new Date()
  const scope = sql`code = ${query.code} and registry = ${query.registry ?? ANY_REGISTRY} and chain_id = ${query.chainId ?? EVERY_CHAIN}`
  const rolling = query.window.to === dayOf(now) && query.window.days === DEFAULT_WINDOW_DAYS
  const [perDay, [overall]] = await Promise.all([
    sql<{ day: string; count: number }[]>`
      select day::text as day, senders::int as count from code_daily_sender_counts
      where ${scope} and day between ${query.window.from} and ${query.window.to}`,
    rolling
      ? ensureWindowsCurrent(sql, now).then(
          () => sql<{ count: number }[]>`
            select coalesce(sum(senders), 0)::int as count from code_sender_window_counts where window_name = ${CODE_SENDER_WINDOW} and ${scope}`,
        )
      : sql<{ count: number }[]>`
          select count(distinct sender)::int as count from code_daily_senders
          where ${scope} and day between ${query.window.from} and ${query.window.to} and attributions > 0`,
  ])
  return { perDay, overall: overall!.count }
}

export const HOURLY_WINDOWS = ['24h', '7d'] as const
export type HourlyWindow = (typeof HOURLY_WINDOWS)[number]
export type HourlyPoint = { hour: string; transactions: number; userOperations: number; reverted: number }


/**
 * A code's hourly series over the rolling 24 hours or the last 7 UTC days
 * (the leaderboard's windows), zero-filled, from `code_hourly_totals`.
 */
export async function readCodeHourly(
  sql: Sql,
  query: { code: string; window: HourlyWindow; chainId?: number; registry?: string; now?: Date },
): Promise<{ from: string; hourly: HourlyPoint[] }> {
  const now = query.now ?? new Date()
  const from = query.window === '24h' ? firstHourOf24h(now) : new Date(`${firstDayOf('7d', now)}T00:00:00Z`)
  // summed per hour in the database: one row per active hour crosses the wire, not one per chain, kind and registry
  const rows = await sql<{ hour: number; transactions: number; userOperations: number; reverted: number }[]>`
    select extract(epoch from hour)::float8 * 1000 as hour,
      coalesce(sum(success_count) filter (where kind = 'transaction'), 0)::float8 as transactions,
      coalesce(sum(success_count) filter (where kind = 'userOperation'), 0)::float8 as "userOperations",
      sum(reverted_count)::float8 as reverted
    from code_hourly_totals
    where code = ${query.code} and hour >= ${from.toISOString()}::timestamptz
      ${query.chainId === undefined ? sql`` : sql`and chain_id = ${query.chainId}`}
      ${query.registry === undefined ? sql`` : sql`and registry = ${query.registry}`}
    group by 1`
  const points = new Map<number, HourlyPoint>()
  for (let time = from.getTime(); time <= now.getTime(); time += HOUR_MS) {
    points.set(time, { hour: new Date(time).toISOString(), transactions: 0, userOperations: 0, reverted: 0 })
  }
  for (const row of rows) {
    const point = points.get(row.hour)
    if (!point) continue
    point.transactions += row.transactions
    point.userOperations += row.userOperations
    point.reverted += row.reverted
  }
  return { from: from.toISOString(), hourly: [...points.values()] }
}
