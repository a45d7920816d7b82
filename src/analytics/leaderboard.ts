import { and, asc, desc, eq, gte, sql, type SQL } from 'drizzle-orm'
import type { Database } from '../db/client.js'
import { codeDailyTotals, codeHourlyTotals } from '../db/schema/index.js'
import { addDays, dayOf } from './window.js'

export const LEADERBOARD_WINDOWS = ['24h', '7d', '30d', 'all'] as const
export type LeaderboardWindow = (typeof LEADERBOARD_WINDOWS)[number]

export const DEFAULT_LEADERBOARD_LIMIT = 20
export const MAX_LEADERBOARD_LIMIT = 100

export type LeaderboardEntry = { rank: number; code: string; total: number }
export type Leaderboard = { window: LeaderboardWindow; entries: LeaderboardEntry[] }

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

type Ranked = { code: string; total: number }

async function rankHourly(db: Database, since: Date, chainId: number | undefined, limit: number): Promise<Ranked[]> {
  const conditions: SQL[] = [gte(codeHourlyTotals.hour, since)]
  if (chainId !== undefined) conditions.push(eq(codeHourlyTotals.chainId, chainId))
  const total = sql<number>`sum(${codeHourlyTotals.successCount})::float8`
  return db
    .select({ code: codeHourlyTotals.code, total })
    .from(codeHourlyTotals)
    .where(and(...conditions))
    .groupBy(codeHourlyTotals.code)
    .having(sql`sum(${codeHourlyTotals.successCount}) > 0`)
    .orderBy(desc(total), asc(codeHourlyTotals.code))
    .limit(limit)
}

async function rankDaily(db: Database, since: string | undefined, chainId: number | undefined, limit: number): Promise<Ranked[]> {
  const conditions: SQL[] = []
  if (since !== undefined) conditions.push(gte(codeDailyTotals.day, since))
  if (chainId !== undefined) conditions.push(eq(codeDailyTotals.chainId, chainId))
  const total = sql<number>`sum(${codeDailyTotals.successCount})::float8`
  return db
    .select({ code: codeDailyTotals.code, total })
    .from(codeDailyTotals)
    .where(conditions.length > 0 ? and(...conditions) : undefined)
    .groupBy(codeDailyTotals.code)
    .having(sql`sum(${codeDailyTotals.successCount}) > 0`)
    .orderBy(desc(total), asc(codeDailyTotals.code))
    .limit(limit)
}

/**
 * Codes ranked by successful transactions plus UserOperations in the window,
 * ties broken by code so the order is stable between polls. Codes with only
 * reverted activity are left out. The rolling 24 hours read the hourly
 * totals; longer windows read the daily ones.
 */
export async function readLeaderboard(
  db: Database,
  query: { window: LeaderboardWindow; chainId?: number; limit: number; now?: Date },
): Promise<Leaderboard> {
  const now = query.now ?? new Date()
  const ranked =
    query.window === '24h'
      ? await rankHourly(db, firstHourOf24h(now), query.chainId, query.limit)
      : await rankDaily(db, query.window === 'all' ? undefined : firstDayOf(query.window, now), query.chainId, query.limit)
  return {
    window: query.window,
    entries: ranked.map((row, index) => ({ rank: index + 1, code: row.code, total: Number(row.total) })),
  }
}
