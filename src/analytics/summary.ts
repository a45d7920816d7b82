import type { Sql } from '../db/client.js'
import type { LeaderboardWindow } from './leaderboard.js'
import { addDays, dayOf, firstDayOf, firstHourOf24h, HOUR_MS } from '../store/buckets.js'
import { activityByBucket, activityEver, earliestIndexedDay, type ActivitySums } from '../store/chain-totals.js'
import { windowActivity } from '../store/window-totals.js'
import type { RollingWindows } from '../store/rolling-windows.js'

export const SUMMARY_WINDOWS = ['24h', '7d', '30d', 'all'] as const
export type SummaryWindow = (typeof SUMMARY_WINDOWS)[number]

/** Longest daily series the `all` window draws (its first days are still in the totals). */
export const MAX_SERIES_DAYS = 366


export type SummaryTotals = {
  /** Attribution rows: one per transaction or UserOperation and code. */
  attributions: number
  /** Distinct successful attributed transactions (one carrying several codes counts once). */
  transactions: number
  userOperations: number
  total: number
  /** Distinct attributed transactions and UserOperations that failed. */
  reverted: number
  /** Distinct (code, registry) pairs with any attributed activity in the window. */
  activeCodes: number
  /** Exact distinct senders (transaction `from`, UserOperation `sender`) over the UTC days from `uniqueSendersFrom`. */
  uniqueSenders: number
}

export type SeriesPoint = { start: string; attributions: number; transactions: number; userOperations: number; reverted: number }

export type Summary = {
  window: SummaryWindow
  chainId?: number
  /** Start of the window (ISO time); null for `all` before anything is indexed. */
  from: string | null
  uniqueSendersFrom: string | null
  totals: SummaryTotals
  granularity: 'hour' | 'day'
  series: SeriesPoint[]
}

type Bounds = { granularity: 'hour' | 'day'; start: Date | null; firstDay: string | null }

async function boundsOf(sql: Sql, window: SummaryWindow, chainId: number | undefined, now: Date): Promise<Bounds> {
  if (window === '24h') {
    const start = firstHourOf24h(now)
    return { granularity: 'hour', start, firstDay: dayOf(start) }
  }
  if (window === '7d' || window === '30d') {
    const firstDay = firstDayOf(window, now)
    return { granularity: window === '7d' ? 'hour' : 'day', start: new Date(`${firstDay}T00:00:00Z`), firstDay }
  }
  const earliest = await earliestIndexedDay(sql, chainId)
  const capped = earliest && earliest < addDays(dayOf(now), -(MAX_SERIES_DAYS - 1)) ? addDays(dayOf(now), -(MAX_SERIES_DAYS - 1)) : earliest
  return { granularity: 'day', start: capped ? new Date(`${capped}T00:00:00Z`) : null, firstDay: capped }
}

/** The window's buckets, zero-filled, keyed by their start in ms. */
function emptyBuckets(bounds: Bounds, now: Date): Map<number, SeriesPoint> {
  const points = new Map<number, SeriesPoint>()
  if (!bounds.start) return points
  const step = bounds.granularity === 'hour' ? HOUR_MS : 24 * HOUR_MS
  for (let time = bounds.start.getTime(); time <= now.getTime(); time += step) {
    points.set(time, { start: new Date(time).toISOString(), attributions: 0, transactions: 0, userOperations: 0, reverted: 0 })
  }
  return points
}

/**
 * Whole-index figures over a window, from the chain and code aggregate
 * tables only. Totals and the series are exact to the bucket; `all` counts
 * everything indexed, its series the last 366 days at most.
 */
export async function readSummary(
  windows: RollingWindows,
  query: { window: SummaryWindow; chainId?: number; now?: Date },
): Promise<Summary> {
  const { sql } = windows
  const now = query.now ?? new Date()
  const { chainId } = query
  const bounds = await boundsOf(sql, query.window, chainId, now)
  const [series, ever, activity] = await Promise.all([
    activityByBucket(sql, { granularity: bounds.granularity, since: bounds.start ?? now, chainId }),
    // the totals of `all` include days before the series' first day
    query.window === 'all' ? activityEver(sql, chainId) : Promise.resolve(undefined),
    windowActivity(windows, { window: query.window, chainId, now }),
  ])

  const points = emptyBuckets(bounds, now)
  const sums: SummaryTotals = { attributions: 0, transactions: 0, userOperations: 0, total: 0, reverted: 0, activeCodes: 0, uniqueSenders: 0 }
  const add = (into: ActivitySums, row: ActivitySums) => {
    into.attributions += row.attributions
    into.transactions += row.transactions
    into.userOperations += row.userOperations
    into.reverted += row.reverted
  }
  for (const row of series) {
    const point = points.get(row.start)
    if (point) add(point, row)
    if (query.window !== 'all') add(sums, row)
  }
  if (ever) add(sums, ever)
  sums.total = sums.transactions + sums.userOperations
  sums.activeCodes = activity.activeCodes
  sums.uniqueSenders = activity.uniqueSenders
  return {
    window: query.window,
    ...(chainId === undefined ? {} : { chainId }),
    from: bounds.start?.toISOString() ?? null,
    uniqueSendersFrom: query.window === 'all' ? null : bounds.firstDay,
    totals: sums,
    granularity: bounds.granularity,
    series: [...points.values()],
  }
}

export type { LeaderboardWindow }
