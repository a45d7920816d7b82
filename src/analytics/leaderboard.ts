import { isValidCode } from '../attribution/codes.js'
import type { Sql } from '../db/client.js'
import { CANONICAL_REGISTRY } from '../db/schema/index.js'
import { codeWindowsOf, ensureWindowsCurrent, scopeOf } from './rolling-windows.js'

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

type RankedRow = { code: string; registry: string; total: number; transactions: number; userOperations: number; reverted: number }

function conditions(sql: Sql, windowName: string, query: LeaderboardQuery) {
  return sql`
    window_name = ${windowName} and scope = ${scopeOf(query.chainId)}
    ${query.registry === undefined ? sql`` : sql`and registry = ${query.registry}`}
    ${query.includeInvalid ? sql`` : sql`and valid`}`
}

/**
 * Codes ranked by successful transactions plus UserOperations in the window,
 * each (code, registry namespace) its own entry, ties broken by code then
 * registry so the order is stable between polls. Codes with only reverted
 * activity are left out; so are invalid codes unless asked for. The rolling
 * 24 hours count hour buckets, longer windows UTC days; the figures come
 * from the rolling window totals, kept ready (rolling-windows.ts), and the
 * page is the first rows of their rank index.
 */
export async function readLeaderboard(sql: Sql, query: LeaderboardQuery): Promise<Leaderboard> {
  await ensureWindowsCurrent(sql, query.now)
  const { current, previous } = codeWindowsOf(query.window)
  const [ranked, [grand]] = await Promise.all([
    sql<RankedRow[]>`
      select code, registry, total::float8 as total, transactions::float8 as transactions,
        user_operations::float8 as "userOperations", reverted::float8 as reverted
      from code_window_totals
      where ${conditions(sql, current, query)} and total > 0
      order by total desc nulls last, code, registry
      limit ${query.limit}`,
    sql<{ total: number }[]>`select coalesce(sum(total), 0)::float8 as total from code_window_totals where ${conditions(sql, current, query)}`,
  ])
  const codes = [...new Set(ranked.map((row) => row.code))]
  const [before, wallets] = await Promise.all([
    previous && codes.length > 0
      ? sql<{ code: string; registry: string; total: number }[]>`
          select code, registry, total::float8 as total from code_window_totals
          where ${conditions(sql, previous, query)} and code = any(${codes})`
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
        share: grand!.total > 0 ? row.total / grand!.total : 0,
        previousTotal,
        change: previousTotal === null ? null : row.total - previousTotal,
        invalid: !isValidCode(row.code),
      }
    }),
  }
}
