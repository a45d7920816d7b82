import { addDays, DAY_MS, dayOf } from '../store/buckets.js'

/**
 * The day window of a code's analytics. Days are UTC calendar days, the
 * same days the indexer buckets `code_daily_totals` by (store/buckets.ts).
 */
export type DayWindow = { from: string; to: string; days: number }

/** Days in the window when the caller gives neither end. */
export const DEFAULT_WINDOW_DAYS = 30
/** Longest window a request may ask for: it bounds the zero-filled series. */
export const MAX_WINDOW_DAYS = 366

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

