/**
 * The time buckets the totals are kept by: UTC calendar days and UTC hours,
 * and where the leaderboard's rolling windows start. The store's windows and
 * the analytics answers both count by these, so they are defined once here.
 */
export const HOUR_MS = 3_600_000
export const DAY_MS = 24 * HOUR_MS

/** The UTC day of an instant, as YYYY-MM-DD. */
export function dayOf(date: Date): string {
  return date.toISOString().slice(0, 10)
}

export function addDays(day: string, count: number): string {
  return dayOf(new Date(Date.parse(`${day}T00:00:00Z`) + count * DAY_MS))
}

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

/**
 * Hourly totals are kept for the hours of the last HOURLY_TOTALS_DAYS days
 * (by the database's clock) only. Every hourly read looks back at most 7
 * days — the 24h and 7d series, the rolling 24 hours and the 24 before them
 * — so an older hour is never read, and a backfill of history writes and
 * keeps none (on a long chain, 24 rows per code and day nobody asks for).
 * The margin past 7 days covers a reading process whose clock is behind the
 * database's. Commits and rollbacks apply the same rule, so a row is taken
 * out of an hour only if its hour is still kept.
 */
export const HOURLY_TOTALS_DAYS = 8
