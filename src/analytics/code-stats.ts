import type { Database, Sql } from '../db/client.js'
import { dayOf, firstDayOf, firstHourOf24h, HOUR_MS } from '../store/buckets.js'
import { codeDailyRows, codeHourlySums, codeSenderCounts, type CodeDailyRow } from '../store/code-totals.js'
import { daysOf, DEFAULT_WINDOW_DAYS, type DayWindow } from './window.js'
import type { RollingWindows } from '../store/rolling-windows.js'

/** Successful transactions and UserOperations, their sum, the failed ones of both kinds, and suffix gas. */
export type Totals = { transactions: number; userOperations: number; total: number; reverted: number; suffixGas: number }
export type ChainTotals = Totals & { chainId: number }
/** `uniqueSenders`: exact distinct senders of the code that day (transaction `from`, UserOperation `sender`). */
export type DailyPoint = { day: string; transactions: number; userOperations: number; uniqueSenders: number }

/** `uniqueSenders`: exact distinct senders over the whole window. */
export type CodeStats = { totals: Totals; uniqueSenders: number; byChain: ChainTotals[]; daily: DailyPoint[] }

const emptyTotals = (): Totals => ({ transactions: 0, userOperations: 0, total: 0, reverted: 0, suffixGas: 0 })

function addRow(totals: Totals, row: CodeDailyRow) {
  if (row.kind === 'transaction') totals.transactions += row.successCount
  else totals.userOperations += row.successCount
  totals.total += row.successCount
  totals.reverted += row.revertedCount
  totals.suffixGas += row.suffixGas
}

/**
 * Totals, per-chain totals and the zero-filled daily series of one code over
 * a window, read from its daily totals only (one row per chain, day, kind
 * and registry, so one indexed range read gives every number), and its
 * distinct senders per day and over the window.
 */
export async function readCodeStats(
  db: Database,
  windows: RollingWindows,
  query: { code: string; window: DayWindow; chainId?: number; registry?: string; now?: Date },
): Promise<CodeStats> {
  const now = query.now ?? new Date()
  const scope = { code: query.code, chainId: query.chainId, registry: query.registry, from: query.window.from, to: query.window.to }
  // the code view's default window (the last 30 days) is kept ready as a rolling window
  const rolling30d = query.window.to === dayOf(now) && query.window.days === DEFAULT_WINDOW_DAYS
  const senders = codeSenderCounts(windows, { ...scope, rolling30d, now })
  // awaited below; marked handled now so a failing totals query (Postgres down) cannot leave it an unhandled rejection that ends the process
  senders.catch(() => {})
  const rows = await codeDailyRows(db, scope)

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
  const rows = await codeHourlySums(sql, { code: query.code, chainId: query.chainId, registry: query.registry, from })
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
