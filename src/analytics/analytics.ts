import type { Database } from '../db/client.js'
import type { Registry } from '../registry/register.js'
import { readCodeStats, type CodeStats } from './code-stats.js'
import { readLeaderboard, type Leaderboard, type LeaderboardWindow } from './leaderboard.js'
import { resolveDayWindow } from './window.js'

export type CodeAnalytics = CodeStats & { code: string; registered: boolean; from: string; to: string }

/**
 * Read side of the per-code totals. Everything here reads the aggregate
 * tables (`code_daily_totals`, `code_hourly_totals`), never attribution rows,
 * so a request costs the same however busy a code is.
 */
export function createAnalytics({ db, registry }: { db: Database; registry: Pick<Registry, 'findByCode'> }) {
  /** Throws InvalidWindowError for a window that is malformed, reversed or too long. */
  async function codeAnalytics(
    code: string,
    query: { from?: string; to?: string; chainId?: number; now?: Date } = {},
  ): Promise<CodeAnalytics> {
    const window = resolveDayWindow(query, query.now)
    const [stats, registered] = await Promise.all([
      readCodeStats(db, { code, window, chainId: query.chainId }),
      registry.findByCode(code),
    ])
    return { code, registered: registered !== undefined, ...stats, from: window.from, to: window.to }
  }

  async function leaderboard(query: { window: LeaderboardWindow; chainId?: number; limit: number; now?: Date }): Promise<Leaderboard> {
    return readLeaderboard(db, query)
  }

  return { codeAnalytics, leaderboard }
}

export type Analytics = ReturnType<typeof createAnalytics>
