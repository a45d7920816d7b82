/**
 * The day window of a code's analytics. Days are UTC calendar days, the
 * same days the indexer buckets `code_daily_totals` by.
 */
export type DayWindow = { from: string; to: string; days: number }

/** Days in the window when the caller gives neither end. */
export const DEFAULT_WINDOW_DAYS = 30
/** Longest window a request may ask for: it bounds the zero-filled series. */
export const MAX_WINDOW_DAYS = 366

export const HOUR_MS = 3_600_000
export const DAY_MS = 24 * HOUR_MS
const DAY_PATTERN = /^\d{4}-\d{2}-\d{2}$/

/** Thrown for a window the caller cannot have meant; `field` names the query parameter at fault. */
export class InvalidWindowError extends Error {
  override name = 'InvalidWindowError'
  constructor(
    readonly field: 'from' | 'to',
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`)
  }
}

/** True for a real calendar day written as YYYY-MM-DD (2024-02-30 is not one). */
export function isCalendarDay(value: string): boolean {
  if (!DAY_PATTERN.test(value)) return false
  const parsed = new Date(`${value}T00:00:00Z`)
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === value
}

export function dayOf(date: Date): string {
  return date.toISOString().slice(0, 10)
}

export function addDays(day: string, count: number): string {
  return dayOf(new Date(Date.parse(`${day}T00:00:00Z`) + count * DAY_MS))
}

function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS)
}

/**
 * Resolves the requested ends into a window: `to` defaults to today, `from`
 * to 29 days before `to` (30 days in all). Both ends are inclusive.
 */
export function resolveDayWindow(request: { from?: string; to?: string }, now = new Date()): DayWindow {
  if (request.from !== undefined && !isCalendarDay(request.from)) throw new InvalidWindowError('from', 'must be a date as YYYY-MM-DD')
  if (request.to !== undefined && !isCalendarDay(request.to)) throw new InvalidWindowError('to', 'must be a date as YYYY-MM-DD')
  const to = request.to ?? dayOf(now)
  const from = request.from ?? addDays(to, -(DEFAULT_WINDOW_DAYS - 1))
  const span = daysBetween(from, to)
  if (span < 0) throw new InvalidWindowError('from', `must not be after to (${to})`)
  if (span + 1 > MAX_WINDOW_DAYS) throw new InvalidWindowError('from', `window is ${span + 1} days; at most ${MAX_WINDOW_DAYS} are allowed`)
  return { from, to, days: span + 1 }
}

/** Every day of the window in order, for zero-filling a series. */
export function daysOf(window: DayWindow): string[] {
  return Array.from({ length: window.days }, (_, offset) => addDays(window.from, offset))
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
