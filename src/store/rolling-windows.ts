import type postgres from 'postgres'
import type { Sql } from '../db/client.js'
import { chainScopes, everyChainKeptIn, everyChainReadScope } from './every-chain.js'
import { DAY_MS, firstDayOf, firstHourOf24h, HOUR_MS } from './buckets.js'
import { countsNowhere, mergedRefs } from './scope-refs.js'

/**
 * Rolling windows kept ready (see `window_bounds` in the schema): per code
 * totals in `code_window_totals`, distinct senders in `window_sender_refs` /
 * `sender_window_counts`, a code's distinct senders in
 * `window_code_sender_refs` / `code_sender_window_counts` — so the leaderboard, active codes and unique senders over 30
 * days cost the rows they return, not the days they span.
 *
 * Commits and rollbacks move every ready window their rows fall in, in the
 * statement that moves the other aggregates (commit.ts). Time
 * passing is this module's job: before a read, each window is moved to where
 * `now` puts it — the buckets it leaves are taken out and those it enters
 * added, read from the hourly / daily totals — at most once per bucket
 * boundary. A window never built (`ready` false, as the migration leaves it)
 * is built from the totals the first time.
 *
 * Exactness under concurrency: a commit locks the bounds rows FOR SHARE and
 * a move FOR UPDATE, then reads the totals in a later statement, so every
 * committed row is counted either by the commit (old bounds) or by the move
 * (its snapshot starts after the commit ended), never by both or neither.
 */

/** [from, until) in ms since the epoch; ±Infinity for open ends. */
type Bounds = { from: number; until: number }
type Subject = 'code' | 'sender' | 'code-sender'
/** `hour` windows read the hourly totals; every other window moves by whole UTC days and reads the daily ones. */
type RollingWindow = { name: string; subject: Subject; buckets?: 'hour'; boundsAt(now: Date): Bounds }

const startOfDay = (day: string) => Date.parse(`${day}T00:00:00Z`)
const floorToDay = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS

function trailingDays(window: '7d' | '30d', previous: boolean): (now: Date) => Bounds {
  const days = window === '7d' ? 7 : 30
  return (now) => {
    const from = startOfDay(firstDayOf(window, now))
    return previous ? { from: from - days * DAY_MS, until: from } : { from, until: Infinity }
  }
}

/** The leaderboard's windows (hour buckets for 24h, UTC days otherwise) and those just before them. */
const CODE_WINDOWS: RollingWindow[] = [
  { name: '24h', subject: 'code', buckets: 'hour', boundsAt: (now) => ({ from: firstHourOf24h(now).getTime(), until: Infinity }) },
  { name: 'prev:24h', subject: 'code', buckets: 'hour', boundsAt: (now) => ({ from: firstHourOf24h(now).getTime() - 24 * HOUR_MS, until: firstHourOf24h(now).getTime() }) },
  { name: '7d', subject: 'code', boundsAt: trailingDays('7d', false) },
  { name: 'prev:7d', subject: 'code', boundsAt: trailingDays('7d', true) },
  { name: '30d', subject: 'code', boundsAt: trailingDays('30d', false) },
  { name: 'prev:30d', subject: 'code', boundsAt: trailingDays('30d', true) },
  { name: 'all', subject: 'code', boundsAt: () => ({ from: -Infinity, until: Infinity }) },
]

/** Unique senders count whole UTC days (`uniqueSendersFrom`): the 24h window starts at its first hour's day. */
const SENDER_WINDOWS: RollingWindow[] = [
  { name: 'senders:24h', subject: 'sender', boundsAt: (now) => ({ from: floorToDay(firstHourOf24h(now).getTime()), until: Infinity }) },
  { name: 'senders:7d', subject: 'sender', boundsAt: trailingDays('7d', false) },
  { name: 'senders:30d', subject: 'sender', boundsAt: trailingDays('30d', false) },
  { name: 'senders:all', subject: 'sender', boundsAt: () => ({ from: -Infinity, until: Infinity }) },
]

/** A window's row in `window_bounds`, as a commit reads it (ms since the epoch, ±Infinity for open ends). */
export type WindowState = { subject: Subject; ready: boolean; fromMs: number }

/**
 * The first day whose senders of a chain (`chain_daily_senders`) a sender
 * window may still read: a window is moved by the days it leaves and built
 * from the days it spans, both read there (apply). A ready window's start
 * only moves forward and a ready all-time window never moves again, so a
 * day before every ready window's start is never read again — unless a
 * window is still to be built (-Infinity: every day may be). The bulk path
 * writes no chain senders of earlier days (issue 40: a dense chain's history
 * was a member row per sender and day that nothing would read).
 */
export function chainSendersReadFrom(windows: readonly WindowState[]): number {
  let from = Infinity
  for (const window of windows) {
    if (window.subject !== 'sender') continue
    if (!window.ready) return -Infinity
    if (window.fromMs !== -Infinity) from = Math.min(from, window.fromMs)
  }
  return from
}

/** A code's distinct senders over the code view's default window (the last 30 UTC days). */
export const CODE_SENDER_WINDOW = 'code-senders:30d'
const CODE_SENDER_WINDOWS: RollingWindow[] = [{ name: CODE_SENDER_WINDOW, subject: 'code-sender', boundsAt: trailingDays('30d', false) }]

const WINDOWS = [...CODE_WINDOWS, ...SENDER_WINDOWS, ...CODE_SENDER_WINDOWS].sort((a, b) => (a.name < b.name ? -1 : 1))

export type CodeWindowName = '24h' | '7d' | '30d' | 'all'

/** The window a leaderboard reads, and the one before it (none for `all`). */
export function codeWindowsOf(window: CodeWindowName): { current: string; previous?: string } {
  return window === 'all' ? { current: 'all' } : { current: window, previous: `prev:${window}` }
}

export const senderWindowOf = (window: CodeWindowName) => `senders:${window}`

/** Scope of the rolling rows a read names: one chain, or every chain together (every-chain.ts). */
export const scopeOf = (sql: Sql, chainId: number | undefined) => (chainId === undefined ? everyChainReadScope(sql) : sql`${chainId}::int`)

const asTimestamp = (ms: number) => (ms === Infinity ? 'infinity' : ms === -Infinity ? '-infinity' : new Date(ms).toISOString())

/** Moves run inside one transaction. */
type Tx = postgres.TransactionSql

const keyOf = (bounds: Bounds) => `${bounds.from}/${bounds.until}`

/**
 * The rolling windows of one database, as this process moves them. It
 * remembers the bounds it last saw each window at, so reads between
 * boundaries skip the check; one per process (the API's server makes it
 * and hands it to the analytics), never a module-level map.
 */
export function createRollingWindows(sql: Sql) {
  const knownBounds = new Map<string, string>()

  /**
   * Moves every window to where `now` puts it (forward only: a process whose
   * clock is behind another's reads the windows as the other left them).
   * Cheap when nothing moved since this process last looked.
   */
  async function ensureCurrent(now: Date = new Date()): Promise<void> {
    for (const window of WINDOWS) {
      const bounds = window.boundsAt(now)
      if (knownBounds.get(window.name) === keyOf(bounds)) continue
      await moveWindow(sql, window, bounds)
      knownBounds.set(window.name, keyOf(bounds))
    }
  }

  /**
   * Keeps the windows moved in the background (at start, then every
   * `intervalMs`), so the first read after a bucket boundary — or after an
   * upgrade, which builds every window once — does not pay for the move.
   */
  function keepCurrent(onError: (error: Error) => void, intervalMs = 60_000): { stop(): void } {
    let running: Promise<void> | undefined
    const tick = () => {
      running ??= ensureCurrent()
        .catch(onError)
        .finally(() => (running = undefined))
    }
    tick()
    const timer = setInterval(tick, intervalMs)
    timer.unref()
    return { stop: () => clearInterval(timer) }
  }

  return { sql, ensureCurrent, keepCurrent }
}

export type RollingWindows = ReturnType<typeof createRollingWindows>

/**
 * One window per transaction: a commit waits (on its FOR SHARE lock) only
 * while the window its rows fall in is being moved or built, and a build
 * after an upgrade does not hold every window at once.
 */
async function moveWindow(sql: Sql, window: RollingWindow, bounds: Bounds) {
  await sql.begin(async (tx) => {
    const [row] = await tx<{ ready: boolean; from: number; until: number }[]>`
      select ready, extract(epoch from from_at)::float8 * 1000 as from, extract(epoch from until_at)::float8 * 1000 as until
      from window_bounds where name = ${window.name} for update`
    if (!row) throw new Error(`rolling window ${window.name} is missing from window_bounds: run the migrations`)
    if (row.ready && bounds.from <= row.from) return
    const everyChain = await everyChainKeptIn(tx)
    if (!row.ready) await rebuild(tx, window, bounds, everyChain)
    else await move(tx, window, { from: row.from, until: row.until }, bounds, everyChain)
    await tx`
      update window_bounds set from_at = ${asTimestamp(bounds.from)}::text::timestamptz, until_at = ${asTimestamp(bounds.until)}::text::timestamptz, ready = true
      where name = ${window.name}`
  })
}

/**
 * The tables behind each kind of distinct window: reference counts by scope
 * (scope-refs.ts), and the counts per group with the scope key read back
 * into the group's columns.
 */
const DISTINCT_TABLES = {
  sender: { refs: 'window_sender_refs', counts: 'sender_window_counts', groupColumns: 'scope', groupOfScope: 'scope.key::int' },
  'code-sender': {
    refs: 'window_code_sender_refs',
    counts: 'code_sender_window_counts',
    groupColumns: 'code, registry, chain_id',
    groupOfScope: `code, split_part(scope.key, '|', 1), split_part(scope.key, '|', 2)::int`,
  },
} as const

async function rebuild(sql: Tx, window: RollingWindow, bounds: Bounds, everyChain: boolean) {
  const table = window.subject === 'code' ? 'code_window_totals' : DISTINCT_TABLES[window.subject].refs
  await sql`delete from ${sql(table)} where window_name = ${window.name}`
  await apply(sql, window, bounds, 1, everyChain)
  await settle(sql, window)
}

/** [f0, u0) → [f1, u1), both ends moving forward: take out what is left behind, add what is entered. */
async function move(sql: Tx, window: RollingWindow, was: Bounds, now: Bounds, everyChain: boolean) {
  const left = { from: was.from, until: Math.min(now.from, was.until) }
  const entered = { from: Math.max(was.until, now.from), until: now.until }
  if (left.from < left.until) await apply(sql, window, left, -1, everyChain)
  if (entered.from < entered.until) await apply(sql, window, entered, 1, everyChain)
  await settle(sql, window)
}

/** Adds (or, with -1, takes out) what the buckets in `bounds` hold to the window's rows, per chain and (when kept) for every chain. */
async function apply(sql: Tx, window: RollingWindow, bounds: Bounds, sign: 1 | -1, everyChain: boolean) {
  const scopes = chainScopes(sql, 'chain_id', everyChain)
  const from = asTimestamp(bounds.from)
  const until = asTimestamp(bounds.until)
  // sender windows are whole UTC days, the days unique senders are kept by
  const inDays = sql`day >= (${from}::text::timestamptz at time zone 'UTC')::date and day < (${until}::text::timestamptz at time zone 'UTC')::date`
  if (window.subject === 'sender') {
    await sql`
      insert into window_sender_refs as t (window_name, sender, refs)
      select ${window.name}, sender, jsonb_object_agg(scope::text, attributions)
      from (
        select s.scope, sender, ${sign} * sum(attributions) as attributions
        from chain_daily_senders cross join lateral ${scopes}
        where ${inDays} and attributions > 0
        group by 1, 2
      ) as by_scope
      group by sender order by sender
      on conflict (window_name, sender) do update set refs = ${mergedRefs(sql)}`
    return
  }
  if (window.subject === 'code-sender') {
    // a code's day rows hold the every-chain and any-registry scopes already
    await sql`
      insert into window_code_sender_refs as t (window_name, code, sender, refs)
      select ${window.name}, code, sender, jsonb_object_agg(scope, attributions)
      from (
        select code, sender, scope.key as scope, ${sign} * sum(scope.value::bigint) as attributions
        from code_day_sender_refs cross join lateral jsonb_each_text(refs) as scope
        where ${inDays} and scope.value::bigint > 0
        group by 1, 2, 3
      ) as by_scope
      group by code, sender order by code, sender
      on conflict (window_name, code, sender) do update set refs = ${mergedRefs(sql)}`
    return
  }
  // day windows read the daily totals (24 times fewer rows). The rolling 24 hours always read the hourly
  // ones, even when their bounds fall on midnight (23:00-23:59 UTC): both tables count the same rows, but
  // which one a window reads must not depend on the time of day
  const source =
    window.buckets === 'hour'
      ? sql`select * from code_hourly_totals where hour >= ${from}::text::timestamptz and hour < ${until}::text::timestamptz`
      : sql`select * from code_daily_totals where ${inDays}`
  await sql`
    insert into code_window_totals as t (window_name, scope, code, registry, transactions, user_operations, reverted)
    select ${window.name}, s.scope, code, registry,
      ${sign} * coalesce(sum(success_count) filter (where kind = 'transaction'), 0),
      ${sign} * coalesce(sum(success_count) filter (where kind = 'userOperation'), 0),
      ${sign} * sum(reverted_count)
    from (${source}) as totals
    cross join lateral ${scopes}
    group by 2, 3, 4 order by 2, 3, 4
    on conflict (window_name, scope, code, registry) do update set
      transactions = t.transactions + excluded.transactions,
      user_operations = t.user_operations + excluded.user_operations,
      reverted = t.reverted + excluded.reverted`
}

/** Drops rows that count nothing any more; recounts a distinct window's groups from its references. */
async function settle(sql: Tx, window: RollingWindow) {
  if (window.subject === 'code') {
    await sql`delete from code_window_totals where window_name = ${window.name} and transactions = 0 and user_operations = 0 and reverted = 0`
    return
  }
  const { refs, counts, groupColumns, groupOfScope } = DISTINCT_TABLES[window.subject]
  await sql`delete from ${sql(refs)} where window_name = ${window.name} and ${countsNowhere(sql)}`
  await sql`delete from ${sql(counts)} where window_name = ${window.name}`
  // the table's constants, never input
  await sql`
    insert into ${sql(counts)} (window_name, ${sql.unsafe(groupColumns)}, senders)
    select ${window.name}, ${sql.unsafe(groupOfScope)}, count(*)
    from ${sql(refs)} cross join lateral jsonb_each_text(refs) as scope
    where window_name = ${window.name} and scope.value::bigint > 0
    group by ${sql.unsafe(groupOfScope)}`
}
