import { isValidCode } from '../attribution/codes.js'
import type { Sql } from '../db/client.js'
import { CANONICAL_REGISTRY } from '../db/schema/index.js'
import { addDays, dayOf } from './window.js'

export const LEADERBOARD_WINDOWS = ['24h', '7d', '30d', 'all'] as const
export type LeaderboardWindow = (typeof LEADERBOARD_WINDOWS)[number]

export const DEFAULT_LEADERBOARD_LIMIT = 20
export const MAX_LEADERBOARD_LIMIT = 100

export type LeaderboardEntry = {
  rank: number
  code: string
  /** `canonical`, or `<chainId>:<address>` of a custom registry: the same text in two namespaces is two entries. */
  registry: string
  /** Successful transactions + UserOperations in the window. */
  total: number
  transactions: number
  userOperations: number
  reverted: number
  /** The wallet the canonical registry holds for the code; null elsewhere or when unregistered. */
  walletAddress: string | null
  /** This entry's share of every listed-kind entry's total in the window (0…1). */
  share: number
  /** The same figure over the window just before; null for `all`. */
  previousTotal: number | null
  change: number | null
  /** Outside the registry rule (1–32 of 0-9a-z_): only listed with include=invalid. */
  invalid: boolean
}
export type Leaderboard = { window: LeaderboardWindow; entries: LeaderboardEntry[] }

export type LeaderboardQuery = {
  window: LeaderboardWindow
  chainId?: number
  limit: number
  includeInvalid?: boolean
  registry?: string
  now?: Date
}

const HOUR_MS = 3_600_000

/**
 * The first hour bucket of the rolling 24 hours: the current (partial) hour
 * and the 23 before it, which is as exact as hourly buckets allow.
 */
export function firstHourOf24h(now: Date): Date {
  return new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - 23 * HOUR_MS)
}

/** The first UTC day of a 7d/30d window: today and the days before it. */
export function firstDayOf(window: '7d' | '30d', now: Date): string {
  return addDays(dayOf(now), window === '7d' ? -6 : -29)
}

/** The registry's rule, in SQL: the same as isValidCode. */
const VALID_CODE_SQL = '^[0-9a-z_]{1,32}$'

type Bucketing = { table: 'code_hourly_totals' | 'code_daily_totals'; column: 'hour' | 'day'; from?: Date | string; until?: Date | string }

/** The window's buckets and those of the window of the same length just before it. */
function bucketsOf(window: LeaderboardWindow, now: Date): { current: Bucketing; previous?: Bucketing } {
  if (window === '24h') {
    const from = firstHourOf24h(now)
    return {
      current: { table: 'code_hourly_totals', column: 'hour', from },
      previous: { table: 'code_hourly_totals', column: 'hour', from: new Date(from.getTime() - 24 * HOUR_MS), until: from },
    }
  }
  if (window === 'all') return { current: { table: 'code_daily_totals', column: 'day' } }
  const from = firstDayOf(window, now)
  const days = window === '7d' ? 7 : 30
  return {
    current: { table: 'code_daily_totals', column: 'day', from },
    previous: { table: 'code_daily_totals', column: 'day', from: addDays(from, -days), until: from },
  }
}

type RankedRow = { code: string; registry: string; total: number; transactions: number; userOperations: number; reverted: number; grand: number }

/** drizzle's driver setup sends parameters as given: times travel as ISO text. */
const boundOf = (bound: Date | string) => (typeof bound === 'string' ? bound : bound.toISOString())

function conditions(sql: Sql, bucketing: Bucketing, query: LeaderboardQuery) {
  const column = sql(bucketing.column)
  return sql`
    ${bucketing.from === undefined ? sql`true` : sql`${column} >= ${boundOf(bucketing.from)}`}
    ${bucketing.until === undefined ? sql`` : sql`and ${column} < ${boundOf(bucketing.until)}`}
    ${query.chainId === undefined ? sql`` : sql`and chain_id = ${query.chainId}`}
    ${query.registry === undefined ? sql`` : sql`and registry = ${query.registry}`}
    ${query.includeInvalid ? sql`` : sql`and code ~ ${VALID_CODE_SQL}`}`
}

/**
 * Codes ranked by successful transactions plus UserOperations in the window,
 * each (code, registry namespace) its own entry, ties broken by code then
 * registry so the order is stable between polls. Codes with only reverted
 * activity are left out; so are invalid codes unless asked for. The rolling
 * 24 hours read the hourly totals; longer windows the daily ones.
 */
export async function readLeaderboard(sql: Sql, query: LeaderboardQuery): Promise<Leaderboard> {
  const now = query.now ?? new Date()
  const { current, previous } = bucketsOf(query.window, now)
  const ranked = await sql<RankedRow[]>`
    with grouped as (
      select code, registry,
        sum(success_count)::float8 as total,
        coalesce(sum(success_count) filter (where kind = 'transaction'), 0)::float8 as transactions,
        coalesce(sum(success_count) filter (where kind = 'userOperation'), 0)::float8 as "userOperations",
        sum(reverted_count)::float8 as reverted
      from ${sql(current.table)}
      where ${conditions(sql, current, query)}
      group by code, registry
      having sum(success_count) > 0
    )
    select *, sum(total) over ()::float8 as grand from grouped
    order by total desc, code, registry
    limit ${query.limit}`
  const codes = [...new Set(ranked.map((row) => row.code))]
  const [before, wallets] = await Promise.all([
    previous && codes.length > 0
      ? sql<{ code: string; registry: string; total: number }[]>`
          select code, registry, sum(success_count)::float8 as total from ${sql(previous.table)}
          where ${conditions(sql, previous, query)} and code = any(${codes})
          group by code, registry`
      : Promise.resolve([]),
    codes.length > 0
      ? sql<{ code: string; wallet_address: string }[]>`select code, wallet_address from builder_codes where code = any(${codes})`
      : Promise.resolve([]),
  ])
  const previousOf = new Map(before.map((row) => [`${row.registry} ${row.code}`, row.total]))
  const walletOf = new Map(wallets.map((row) => [row.code, row.wallet_address]))
  return {
    window: query.window,
    entries: ranked.map((row, index) => {
      const previousTotal = previous ? (previousOf.get(`${row.registry} ${row.code}`) ?? 0) : null
      return {
        rank: index + 1,
        code: row.code,
        registry: row.registry,
        total: row.total,
        transactions: row.transactions,
        userOperations: row.userOperations,
        reverted: row.reverted,
        walletAddress: row.registry === CANONICAL_REGISTRY ? (walletOf.get(row.code) ?? null) : null,
        share: row.grand > 0 ? row.total / row.grand : 0,
        previousTotal,
        change: previousTotal === null ? null : row.total - previousTotal,
        invalid: !isValidCode(row.code),
      }
    }),
  }
}
