import type { Sql } from '../db/client.js'
import { CANONICAL_REGISTRY } from '../db/schema/index.js'
import { codeWindowsOf, scopeOf, senderWindowOf, type CodeWindowName, type RollingWindows } from './rolling-windows.js'

/**
 * Reads of the rolling windows (rolling-windows.ts): each window is moved to
 * `now` first, then read as it stands, so a 30-day figure costs the rows it
 * returns, not the days it spans.
 */

export type WindowQuery = { window: CodeWindowName; chainId?: number | undefined; now?: Date | undefined }

export type RankedCodesQuery = WindowQuery & {
  /** Only this namespace (`canonical` or `<chainId>:<address>`). */
  registry?: string | undefined
  /** Also codes outside the registry rule. */
  includeInvalid?: boolean | undefined
  limit: number
}

/** A ranked (code, registry namespace) of a window, with the figures of the window before and the window's grand total. */
export type RankedCode = {
  code: string
  registry: string
  total: number
  transactions: number
  userOperations: number
  reverted: number
  /** The same total over the window just before; null for `all`. */
  previousTotal: number | null
  /** The wallet the canonical registry holds for the code; null in other namespaces or when unregistered. */
  walletAddress: string | null
  /** Every listed code's total in the window. */
  grand: number
}

/** The rows of one window the query asks for, in the table named `alias`. */
function conditions(sql: Sql, alias: string, windowName: string, query: RankedCodesQuery) {
  const column = (name: string) => sql(`${alias}.${name}`)
  return sql`
    ${column('window_name')} = ${windowName} and ${column('scope')} = ${scopeOf(sql, query.chainId)}
    ${query.registry === undefined ? sql`` : sql`and ${column('registry')} = ${query.registry}`}
    ${query.includeInvalid ? sql`` : sql`and ${column('valid')}`}`
}

/**
 * The first `limit` codes of a window by successful transactions plus
 * UserOperations, ties by code then registry, codes with only reverted
 * activity left out: the first rows of the window totals' rank index. One
 * round trip gives the page, the window's grand total, the page's totals in
 * the window before and their wallets.
 */
export async function rankedCodes(windows: RollingWindows, query: RankedCodesQuery): Promise<RankedCode[]> {
  const { sql } = windows
  await windows.ensureCurrent(query.now)
  const { current, previous } = codeWindowsOf(query.window)
  return sql<RankedCode[]>`
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
}

/**
 * Distinct (code, registry) pairs with any attributed activity in the
 * window, and exact distinct senders over the window's UTC days.
 */
export async function windowActivity(windows: RollingWindows, query: WindowQuery): Promise<{ activeCodes: number; uniqueSenders: number }> {
  const { sql } = windows
  await windows.ensureCurrent(query.now)
  const scope = scopeOf(sql, query.chainId)
  const [[codes], [senders]] = await Promise.all([
    sql<{ count: number }[]>`
      select count(*)::int as count from code_window_totals
      where window_name = ${query.window} and scope = ${scope} and transactions + user_operations + reverted > 0`,
    sql<{ count: number }[]>`
      select coalesce(sum(senders), 0)::int as count from sender_window_counts
      where window_name = ${senderWindowOf(query.window)} and scope = ${scope}`,
  ])
  return { activeCodes: codes!.count, uniqueSenders: senders!.count }
}
