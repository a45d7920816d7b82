import { eip55, registryLabel } from '../contract/schemas.js'
import { isValidCode } from '../attribution/codes.js'
import type { RollingWindows } from '../store/rolling-windows.js'
import { rankedCodes, type RankedCode } from '../store/window-totals.js'

export const LEADERBOARD_WINDOWS = ['24h', '7d', '30d', 'all'] as const
export type LeaderboardWindow = (typeof LEADERBOARD_WINDOWS)[number]

export const DEFAULT_LEADERBOARD_LIMIT = 20
export const MAX_LEADERBOARD_LIMIT = 100

/** A ranked code as the store reads it (the namespace, the window's figures, the window before, the wallet), and its place. */
export type LeaderboardEntry = Omit<RankedCode, 'grand'> & {
  rank: number
  /** This entry's share of every listed-kind entry's total in the window (0…1). */
  share: number
  /** `total - previousTotal`; null for `all`. */
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

/**
 * Codes ranked by successful transactions plus UserOperations in the window,
 * each (code, registry namespace) its own entry, ties broken by code then
 * registry so the order is stable between polls. Codes with only reverted
 * activity are left out; so are invalid codes unless asked for. The rolling
 * 24 hours count hour buckets, longer windows UTC days; the figures come
 * from the rolling window totals, kept ready by the store, and the page is
 * the first rows of their rank index (store/window-totals.ts).
 */
export async function readLeaderboard(windows: RollingWindows, query: LeaderboardQuery): Promise<Leaderboard> {
  const ranked = await rankedCodes(windows, query)
  return {
    window: query.window,
    entries: ranked.map((row, index) => {
      return {
        rank: index + 1,
        code: row.code,
        registry: registryLabel(row.registry),
        total: row.total,
        transactions: row.transactions,
        userOperations: row.userOperations,
        reverted: row.reverted,
        walletAddress: row.walletAddress === null ? null : eip55(row.walletAddress),
        share: row.grand > 0 ? row.total / row.grand : 0,
        previousTotal: row.previousTotal,
        change: row.previousTotal === null ? null : row.total - row.previousTotal,
        invalid: !isValidCode(row.code),
      }
    }),
  }
}
