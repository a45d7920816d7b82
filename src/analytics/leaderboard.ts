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

/** A row of the leaderboard's statement: the entry's own columns, and the window's grand total for its share. */
type RankedRow = Pick<LeaderboardEntry, 'code' | 'registry' | 'total' | 'transactions' | 'userOperations' | 'reverted' | 'previousTotal' | 'walletAddress'> & {
  grand: number
}

/** The rows of one window the query asks for, in the table named `alias`. */
function conditions(sql: Sql, alias: string, windowName: string, query: LeaderboardQuery) {
  const column = (name: string) => sql(`${alias}.${name}`)
  return sql`
    ${column('window_name')} = ${windowName} and ${column('scope')} = ${scopeOf(query.chainId)}
    ${query.registry === undefined ? sql`` : sql`and ${column('registry')} = ${query.registry}`}
    ${query.includeInvalid ? sql`` : sql`and ${column('valid')}`}`
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
  // one round trip: the page, the window's grand total, the page's totals in the window before, their wallets
  const ranked = await sql<RankedRow[]>`
    with page as (
      select code, registry, total, transactions, user_operations, reverted
      from code_window_totals ranked
      where ${conditions(sql, 'ranked', current, query)} and total > 0
      order by total desc nulls last, code, registry
      limit ${query.limit}
    )
    select page.code, page.registry, page.total::float8 as total, page.transactions::float8 as transactions,
      page.user_operations::float8 as "userOperations", page.reverted::float8 as reverted,
      (select coalesce(sum(total), 0) from code_window_totals listed where ${conditions(sql, 'listed', current, query)})::float8 as grand,
      ${previous ? sql`coalesce(before.total, 0)::float8` : sql`null::float8`} as "previousTotal",
      case when page.registry = ${CANONICAL_REGISTRY} then wallet.wallet_address end as "walletAddress"
    from page
    ${previous ? sql`left join code_window_totals before on ${conditions(sql, 'before', previous, query)} and before.code = page.code and before.registry = page.registry` : sql``}
    left join builder_codes wallet on wallet.code = page.code
    order by page.total desc nulls last, page.code, page.registry`
  return {
    window: query.window,
    entries: ranked.map((row, index) => {
      return {
        rank: index + 1,
        code: row.code,
        registry: row.registry,
        total: row.total,
        transactions: row.transactions,
        userOperations: row.userOperations,
        reverted: row.reverted,
        walletAddress: row.walletAddress,
        share: row.grand > 0 ? row.total / row.grand : 0,
        previousTotal: row.previousTotal,
        change: row.previousTotal === null ? null : row.total - row.previousTotal,
        invalid: !isValidCode(row.code),
      }
    }),
  }
}
