import type postgres from 'postgres'
import { ANY_REGISTRY, EVERY_CHAIN } from '../db/schema/index.js'
import { registryOfRow } from './aggregates.js'
import { arrayLiteral } from './attribution-columns.js'
import { DAY_MS, dayOf, firstDayOf } from './buckets.js'
import { checkpointOf } from './ranges.js'

type Sql = postgres.Sql | postgres.TransactionSql | postgres.ReservedSql

/**
 * A code's distinct senders per day in history (issue 40): what a day's
 * final rows cost without a member row per (code, day, sender).
 *
 * `code_day_sender_refs` keeps a row per (code, day, sender) so that a
 * day's count can move by each commit and rollback, and so that the code
 * view's 30-day window can take out the days it leaves. A history day
 * (`historyBeforeMs`) needs neither: it is older than any such window, so
 * no window ever enters it, and before the day of the chain's finalized
 * block, so every block of it is final — no tip row falls in it, nothing
 * takes a row out. So the bulk path writes no member for a row of a
 * history day (fold.ts), records the day (`history_days`), and counts the
 * day's senders per code from its rows in one statement once the day is
 * complete (`rollUpHistoryDays`): a block of a later day committed, and
 * every block below it. Dense history paid a member row per attribution
 * (~24 µs of PostgreSQL's ~63 in the dense backfill, bench/LOG.md); the
 * count reads the day's rows once.
 *
 * Until then the day's counts lag its totals. A tip commit or rollback
 * touching a history day all the same (a process whose finalized block
 * lags another's) counts it again after its own rows
 * (`recountHistoryDays`): a count replaces whatever members added. Reads
 * of a code's senders over several days take a history day's senders from
 * its rows (code-totals.ts).
 */

/** Days before the code view's 30-day window by this many are history: room for the API's clock and the database's to differ. */
const MARGIN_DAYS = 2

/**
 * The first day that is not history at `nowMs`: the code-sender window's
 * first day less MARGIN_DAYS, and no later than the day of the chain's
 * finalized block (`finalizedAt`, Unix seconds; none known: no history).
 */
export function historyBeforeMs(nowMs: number, finalizedAt: number | undefined): number {
  if (finalizedAt === undefined) return -Infinity
  return Math.min(windowsReadFromMs(nowMs), Math.floor((finalizedAt * 1000) / DAY_MS) * DAY_MS)
}

/** The first day a rolling window may read code sender members of at `nowMs`, less MARGIN_DAYS: every history day is before it. */
export function windowsReadFromMs(nowMs: number): number {
  return Date.parse(`${firstDayOf('30d', new Date(nowMs))}T00:00:00Z`) - MARGIN_DAYS * DAY_MS
}

/** Of `days` (per chain), those `history_days` marks as history: a tip commit's rows there are recounted. */
export function markedHistoryDays(sql: Sql, days: ReadonlyMap<number, ReadonlySet<string>>) {
  const pairs = [...days].flatMap(([chainId, chainDays]) => [...chainDays].map((day) => ({ chainId, day })))
  return sql<{ chain_id: number; day: string }[]>`
    select chain_id, day::text as day from history_days
    where history and (chain_id, day) in (
      select * from unnest(${arrayLiteral(pairs.map((p) => p.chainId))}::int[], ${arrayLiteral(pairs.map((p) => p.day))}::date[]))`
}

/** A day (`YYYY-MM-DD`) as the bounds of its rows' `block_timestamp`. */
const dayStart = (sql: Sql, day: ReturnType<Sql>) => sql`(${day}::date::timestamp at time zone 'UTC')`

/** Per (chain, day) of the batch's blocks: its first and last block and whether it is history. */
export type HistoryDayColumns = { chain_id: number[]; day: string[]; first_block: number[]; last_block: number[]; history: boolean[] }

export function historyDaysOf(results: ReadonlyArray<{ job: { chainId: number }; blocks: ReadonlyArray<{ number: number; timestamp: number }> }>, beforeMs: number): HistoryDayColumns {
  const seen = new Map<string, { chainId: number; day: string; first: number; last: number; history: boolean }>()
  for (const { job, blocks } of results)
    for (const block of blocks) {
      const dayMs = Math.floor((block.timestamp * 1000) / DAY_MS) * DAY_MS
      const key = `${job.chainId}:${dayMs}`
      const day = seen.get(key)
      if (day === undefined)
        seen.set(key, { chainId: job.chainId, day: dayOf(new Date(dayMs)), first: block.number, last: block.number, history: dayMs < beforeMs })
      else {
        day.first = Math.min(day.first, block.number)
        day.last = Math.max(day.last, block.number)
      }
    }
  const days = [...seen.values()].sort((a, b) => a.chainId - b.chainId || (a.day < b.day ? -1 : 1))
  return {
    chain_id: days.map((d) => d.chainId),
    day: days.map((d) => d.day),
    first_block: days.map((d) => d.first),
    last_block: days.map((d) => d.last),
    history: days.map((d) => d.history),
  }
}

/**
 * Records the batch's days; a day written again (blocks of it committed
 * after it was counted: timestamps that went back) is counted again.
 */
export function recordHistoryDays(sql: Sql, days: HistoryDayColumns) {
  return sql`
    insert into history_days as t (chain_id, day, first_block, last_block, history)
    select * from unnest(
      ${arrayLiteral(days.chain_id)}::int[], ${arrayLiteral(days.day)}::date[], ${arrayLiteral(days.first_block)}::bigint[],
      ${arrayLiteral(days.last_block)}::bigint[], ${arrayLiteral(days.history)}::boolean[])
    order by 1, 2
    on conflict (chain_id, day) do update set
      first_block = least(t.first_block, excluded.first_block), last_block = greatest(t.last_block, excluded.last_block),
      history = t.history or excluded.history, rolled_up = false`
}

/**
 * After a bulk commit of `chainId`: counts the history days now complete —
 * a later day's first block at or below the checkpoint (every block below
 * it committed) — and marks them rolled up.
 */
export async function rollUpHistoryDays(sql: Sql, chainId: number, everyChain: boolean): Promise<void> {
  const complete = await sql<{ day: string }[]>`
    with through as (select ${checkpointOf(sql, sql`${chainId}::int`)} as block)
    select d.day::text as day
    from history_days d, through
    where d.chain_id = ${chainId} and d.history and not d.rolled_up
      and (select min(n.first_block) from history_days n where n.chain_id = d.chain_id and n.day > d.day) <= through.block`
  if (complete.length === 0) return
  const days = complete.map(({ day }) => day)
  await recountHistoryDays(sql, chainId, days, everyChain)
  await sql`update history_days set rolled_up = true where chain_id = ${chainId} and day = any(${arrayLiteral(days)}::date[])`
}

/**
 * Each history day of `days` counted from its rows: per code, its distinct
 * senders in each registry and in any (`*`), on the chain and (when kept)
 * on every chain, replacing the counts members had moved.
 *
 * A chain's rows of the day are read by block, in the order they are
 * stored: between the last block recorded of an earlier day and the first
 * of a later one (a chain's block times only grow, a consensus rule), so
 * tip rows of the day no bulk commit recorded are read too. Every chain's
 * rows of the day's codes are read by the code page index (code, time):
 * other chains' blocks of the day may be recorded nowhere.
 */
export async function recountHistoryDays(sql: Sql, chainId: number, days: readonly string[], everyChain: boolean): Promise<void> {
  const historic = await sql<{ day: string; after: string | null; before: string | null }[]>`
    select d.day::text as day,
      (select max(e.last_block) from history_days e where e.chain_id = d.chain_id and e.day < d.day) as after,
      (select min(n.first_block) from history_days n where n.chain_id = d.chain_id and n.day > d.day) as before
    from history_days d
    where d.chain_id = ${chainId} and d.history and d.day = any(${arrayLiteral([...days])}::date[]) order by d.day`
  for (const { day, after, before } of historic) {
    const blocks = { after: after === null ? -1 : Number(after), before: before === null ? undefined : Number(before) }
    await recountDay(sql, day, chainId, chainRowsOfDay(sql, chainId, day, blocks))
    if (everyChain) await recountDay(sql, day, EVERY_CHAIN, codesRowsOfDay(sql, chainId, day))
  }
}

/** Counts a day's rows (a relation of `code`, `registry`, `sender`) into `scope`'s counts. */
function recountDay(sql: Sql, day: string, scope: number, rows: postgres.PendingQuery<postgres.Row[]>) {
  return sql`
    insert into code_daily_sender_counts as t (code, registry, chain_id, day, senders)
    select code, coalesce(registry, ${ANY_REGISTRY}), ${scope}::int, ${day}::date, count(distinct sender)
    from (${rows}) as rows
    group by grouping sets ((code, registry), (code))
    order by 1, 2
    on conflict (code, registry, chain_id, day) do update set senders = excluded.senders`
}

/** The chain's rows of the day, read by block between `after` and `before` (none: no later day recorded). */
function chainRowsOfDay(sql: Sql, chainId: number, day: string, blocks: { after: number; before: number | undefined }) {
  const from = dayStart(sql, sql`${day}`)
  return sql`
    select a.code, ${registryOfRow(sql)} as registry, a.sender from attributions a
    where a.chain_id = ${chainId} and a.block_number > ${blocks.after}
      ${blocks.before === undefined ? sql`` : sql`and a.block_number < ${blocks.before}`}
      and a.block_timestamp >= ${from} and a.block_timestamp < ${from} + interval '1 day'`
}

/** Every chain's rows of the day of the codes `chainId` has rows of that day, by the code page index. */
function codesRowsOfDay(sql: Sql, chainId: number, day: string) {
  const from = dayStart(sql, sql`${day}`)
  return sql`
    select c.code, ${registryOfRow(sql)} as registry, a.sender
    from (select distinct code from code_daily_totals where day = ${day}::date and chain_id = ${chainId}) as c
    join lateral (
      select a.sender, a.registry_chain_id, a.registry_address from attributions a
      where a.code = c.code and a.block_timestamp >= ${from} and a.block_timestamp < ${from} + interval '1 day'
    ) as a on true`
}

/**
 * A code's senders on the history days of `from`…`to` (on `chainId`, or
 * every chain), from their rows: the part of a distinct count over days
 * that no member row holds. A relation of one column, `sender`.
 */
export function historySenders(sql: Sql, query: { code: string; registry: string; chainId: number | undefined; from: string; to: string }) {
  return sql`
    select a.sender
    from history_days h
    join lateral (
      select a.sender, a.registry_chain_id, a.registry_address from attributions a
      where a.code = ${query.code} and a.chain_id = h.chain_id
        and a.block_timestamp >= ${dayStart(sql, sql`h.day`)} and a.block_timestamp < ${dayStart(sql, sql`h.day`)} + interval '1 day'
    ) as a on true
    where h.history and h.day between ${query.from} and ${query.to}
      ${query.chainId === undefined ? sql`` : sql`and h.chain_id = ${query.chainId}`}
      ${query.registry === ANY_REGISTRY ? sql`` : sql`and ${registryOfRow(sql)} = ${query.registry}`}`
}
