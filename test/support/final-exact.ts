import { getAddress, toEventSelector, type Hex } from 'viem'
import { expect } from 'vitest'
import { readCodeStats } from '../../src/analytics/code-stats.js'
import { readLeaderboard } from '../../src/analytics/leaderboard.js'
import { readSummary } from '../../src/analytics/summary.js'
import { resolveDayWindow } from '../../src/analytics/window.js'
import type { Database } from '../../src/db/client.js'
import { addDays, dayOf, DAY_MS, firstDayOf, firstHourOf24h } from '../../src/store/buckets.js'
import { chainSendersReadFrom, createRollingWindows, type WindowState } from '../../src/store/rolling-windows.js'
import type { GroundTruth } from '../../devnet/ledger.js'
import type { TestChain } from './chain.js'
import { expectIndexMatchesTruth } from './fixtures.js'

/**
 * Exactness checks for the two write regimes (issue 40): the bulk path's
 * rows and folded aggregates, the tip path's counted ones, and where they
 * meet. Every figure is compared with something the write path did not
 * produce: the rows with the traffic's ground truth, each row's sender with
 * the chain (a transaction's `from`, an operation's UserOperationEvent), and
 * every aggregate a read serves (totals, distinct senders per day and over
 * every rolling window, the leaderboards) with a count over those rows.
 */

const WINDOWS = ['24h', '7d', '30d', 'all'] as const
type Window = (typeof WINDOWS)[number]
export type Bounds = { from: number; until: number }

const USER_OPERATION_EVENT = toEventSelector('UserOperationEvent(bytes32,address,address,uint256,bool,uint256,uint256)')

/** Every rolling window made ready now, as a running API keeps them: commits then fold their rows into the windows. */
export async function readyRollingWindows(db: Database): Promise<void> {
  await createRollingWindows(db.$client).ensureCurrent(new Date())
}

/** Rows, totals, malformed suffixes (fixtures.ts), each row's sender, and every aggregate read: all exact. */
export async function expectIndexExact(db: Database, chain: TestChain, truth: GroundTruth): Promise<void> {
  await expectIndexMatchesTruth(db, chain.chainId, truth)
  await expectSendersMatchChain(db, chain)
  await expectAggregatesMatchRows(db, [chain.chainId])
}

/** Each attribution row's sender is the chain's: the transaction's `from`, or the sender its UserOperationEvent names. */
export async function expectSendersMatchChain(db: Database, chain: TestChain): Promise<void> {
  const rows = await db.$client<{ tx_hash: Hex; user_op_index: number; user_op_hash: string | null; kind: string; sender: string }[]>`
    select distinct tx_hash, user_op_index, user_op_hash, kind, sender from attributions where chain_id = ${chain.chainId}`
  const receipts = new Map<string, { from: string; opSenders: Map<string, string> }>()
  for (const txHash of new Set(rows.map((row) => row.tx_hash))) {
    const receipt = await chain.client.getTransactionReceipt({ hash: txHash })
    const opSenders = new Map<string, string>()
    for (const log of receipt.logs)
      if (log.topics[0] === USER_OPERATION_EVENT) opSenders.set(log.topics[1]!.toLowerCase(), `0x${log.topics[2]!.slice(26)}`.toLowerCase())
    receipts.set(txHash, { from: receipt.from.toLowerCase(), opSenders })
  }
  const wrong = rows.filter(({ tx_hash, kind, user_op_hash, sender }) => {
    const chainSays = receipts.get(tx_hash)!
    const expected = kind === 'transaction' ? chainSays.from : chainSays.opSenders.get(user_op_hash!.toLowerCase())
    return expected !== sender.toLowerCase()
  })
  expect(wrong, 'rows whose sender is not the chain’s').toEqual([])
  expect(new Set(rows.map((row) => row.sender)).size, 'distinct senders in the traffic').toBeGreaterThan(1)
}

const registryOf = `case when registry_address is null then 'canonical' else registry_chain_id::text || ':' || lower(registry_address) end`
const eip55Registry = (registry: string) => {
  const [chainId, address] = registry.split(':')
  return address === undefined ? registry : `${chainId}:${getAddress(address)}`
}
const byKey = (a: { code: string; registry: string }, b: { code: string; registry: string }) => (`${a.code} ${a.registry}` < `${b.code} ${b.registry}` ? -1 : 1)

/** A rolling window's bounds at `now` as the store keeps them (ms), the previous period's, and the first day its senders count from. */
export function boundsOf(window: Window, now: Date): { current: Bounds; previous?: Bounds; sendersFrom: number } {
  if (window === 'all') return { current: { from: -Infinity, until: Infinity }, sendersFrom: -Infinity }
  if (window === '24h') {
    const from = firstHourOf24h(now).getTime()
    return { current: { from, until: Infinity }, previous: { from: from - DAY_MS, until: from }, sendersFrom: Math.floor(from / DAY_MS) * DAY_MS }
  }
  const from = Date.parse(`${firstDayOf(window, now)}T00:00:00Z`)
  const length = (window === '7d' ? 7 : 30) * DAY_MS
  return { current: { from, until: Infinity }, previous: { from: from - length, until: from }, sendersFrom: from }
}

/**
 * What every read serves, against a count over the attribution rows for the
 * same `now`: each window's leaderboard (every code, with the window
 * before), active codes and unique senders, per chain and over all of
 * them; each code's distinct senders per day and over its default 30 days
 * (kept rolling) and a two-day window (read from the daily counts), per
 * chain and registry scope. Also that the distinct-sender tables hold a
 * member exactly where rows put one, and no scope below 0.
 */
export async function expectAggregatesMatchRows(db: Database, chainIds: number[], now = new Date()): Promise<void> {
  const sql = db.$client
  const windows = createRollingWindows(sql)
  const chainFilter = (chainId: number | undefined) => (chainId === undefined ? sql`true` : sql`chain_id = ${chainId}`)
  const inBounds = (bounds: Bounds, chainId: number | undefined) => sql`
    ${Number.isFinite(bounds.from) ? sql`block_timestamp >= ${new Date(bounds.from).toISOString()}::timestamptz` : sql`true`}
    and ${Number.isFinite(bounds.until) ? sql`block_timestamp < ${new Date(bounds.until).toISOString()}::timestamptz` : sql`true`}
    and ${chainFilter(chainId)}`
  const totals = (bounds: Bounds, chainId: number | undefined) => sql<{ code: string; registry: string; transactions: number; userOperations: number; reverted: number }[]>`
    select code, ${sql.unsafe(registryOf)} as registry,
      count(*) filter (where status = 'success' and kind = 'transaction')::int as transactions,
      count(*) filter (where status = 'success' and kind = 'userOperation')::int as "userOperations",
      count(*) filter (where status = 'reverted')::int as reverted
    from attributions where ${inBounds(bounds, chainId)} group by 1, 2`

  for (const window of WINDOWS) {
    for (const chainId of [undefined, ...chainIds]) {
      const label = `${window}, chain ${chainId ?? 'all'}`
      const { current, previous, sendersFrom } = boundsOf(window, now)
      const rows = await totals(current, chainId)
      expect(rows.length, `${label}: fewer codes than a leaderboard page`).toBeLessThan(100)
      const previousOf = new Map((previous ? await totals(previous, chainId) : []).map((row) => [`${row.code} ${row.registry}`, row.transactions + row.userOperations]))
      const expected = rows
        .filter((row) => row.transactions + row.userOperations > 0)
        .map((row) => ({
          ...row,
          registry: eip55Registry(row.registry),
          total: row.transactions + row.userOperations,
          previousTotal: previous ? (previousOf.get(`${row.code} ${row.registry}`) ?? 0) : null,
        }))
        .sort(byKey)
      const board = await readLeaderboard(windows, { window, chainId, limit: 100, includeInvalid: true, now })
      const entries = board.entries
        .map(({ code, registry, transactions, userOperations, reverted, total, previousTotal }) => ({ code, registry, transactions, userOperations, reverted, total, previousTotal }))
        .sort(byKey)
      expect(entries, `leaderboard ${label}`).toEqual(expected)
      const [senders] = await sql<{ count: number }[]>`
        select count(distinct sender)::int as count from attributions where ${inBounds({ from: sendersFrom, until: Infinity }, chainId)}`
      const summary = await readSummary(windows, { window, chainId, now })
      expect({ activeCodes: summary.totals.activeCodes, uniqueSenders: summary.totals.uniqueSenders }, `summary ${label}`).toEqual({
        activeCodes: rows.length,
        uniqueSenders: senders!.count,
      })
    }
  }

  const codes = (await sql<{ code: string }[]>`select distinct code from attributions order by code`).map((row) => row.code)
  const dayWindows = [resolveDayWindow({}, now), resolveDayWindow({ from: addDays(dayOf(now), -1), to: dayOf(now) }, now)]
  for (const code of codes) {
    for (const chainId of [undefined, ...chainIds]) {
      for (const registry of [undefined, 'canonical']) {
        for (const window of dayWindows) {
          const filter = sql`code = ${code} and (block_timestamp at time zone 'UTC')::date between ${window.from} and ${window.to}
            and ${chainFilter(chainId)} and ${registry === undefined ? sql`true` : sql`${sql.unsafe(registryOf)} = ${registry}`}`
          const [overall] = await sql<{ count: number }[]>`select count(distinct sender)::int as count from attributions where ${filter}`
          const perDay = await sql<{ day: string; count: number }[]>`
            select (block_timestamp at time zone 'UTC')::date::text as day, count(distinct sender)::int as count from attributions where ${filter} group by 1 order by 1`
          const stats = await readCodeStats(db, windows, { code, window, chainId, registry, now })
          const label = `senders of ${code}, chain ${chainId ?? 'all'}, registry ${registry ?? 'any'}, ${window.from}…${window.to}`
          expect(stats.uniqueSenders, label).toBe(overall!.count)
          expect(stats.daily.filter((point) => point.uniqueSenders > 0).map(({ day, uniqueSenders }) => ({ day, count: uniqueSenders })), label).toEqual(perDay)
        }
      }
    }
  }

  // the members the sender tables hold, exactly where rows put them (a chain's senders: on the days a sender
  // window may read, the only ones the bulk path writes); no scope taken below nothing
  const chainSendersFrom = await chainSendersFirstDay(db)
  const [members] = await sql<{ code_days: number; chain_days: number; negative: number }[]>`
    select
      (select count(*) from (
        (select code, day, sender from code_day_sender_refs r where exists (select 1 from jsonb_each_text(r.refs) s where s.value::bigint > 0)
         except select code, (block_timestamp at time zone 'UTC')::date, sender from attributions)
        union all
        (select code, (block_timestamp at time zone 'UTC')::date, sender from attributions
         except select code, day, sender from code_day_sender_refs r where exists (select 1 from jsonb_each_text(r.refs) s where s.value::bigint > 0))
      ) d)::int as code_days,
      (select count(*) from (
        (select chain_id, day, sender from chain_daily_senders where attributions > 0 and day >= ${chainSendersFrom}::date
         except select chain_id, (block_timestamp at time zone 'UTC')::date, sender from attributions)
        union all
        (select chain_id, (block_timestamp at time zone 'UTC')::date, sender from attributions
         where (block_timestamp at time zone 'UTC')::date >= ${chainSendersFrom}::date
         except select chain_id, day, sender from chain_daily_senders where attributions > 0)
      ) d)::int as chain_days,
      ((select count(*) from chain_daily_senders where attributions < 0)
        + (select count(*) from code_day_sender_refs r, jsonb_each_text(r.refs) s where s.value::bigint < 0)
        + (select count(*) from window_sender_refs r, jsonb_each_text(r.refs) s where s.value::bigint < 0)
        + (select count(*) from window_code_sender_refs r, jsonb_each_text(r.refs) s where s.value::bigint < 0))::int as negative`
  expect(members, 'sender members not matching the rows (code × day, chain × day), scopes below 0').toEqual({ code_days: 0, chain_days: 0, negative: 0 })
}

/**
 * The first day (ISO) whose chain senders a sender window of the database
 * may read, as its window_bounds stand (chainSendersReadFrom): the bulk path
 * writes none of earlier days. '0001-01-01' when every day may be read.
 */
export async function chainSendersFirstDay(db: Database): Promise<string> {
  const windows = await db.$client<{ subject: WindowState['subject']; ready: boolean; from_ms: number }[]>`
    select subject, ready, (extract(epoch from from_at) * 1000)::float8 as from_ms from window_bounds`
  const from = chainSendersReadFrom(windows.map((w) => ({ subject: w.subject, ready: w.ready, fromMs: w.from_ms })))
  return from === -Infinity ? '0001-01-01' : from === Infinity ? '9999-12-31' : new Date(from).toISOString().slice(0, 10)
}

/**
 * Nothing half-applied: every row and block of the chain belongs to a range
 * marked done, every done range has its blocks (those not pruned yet), and the final boundary
 * recorded is the end of a done range (a killed commit left none of its
 * writes behind).
 */
export async function expectNothingHalfCommitted(db: Database, chainId: number): Promise<void> {
  const [state] = await db.$client<{ orphan_rows: number; orphan_blocks: number; short_ranges: number; final_not_done: number }[]>`
    select
      (select count(*) from attributions a where a.chain_id = ${chainId} and not exists (
        select 1 from ranges r where r.chain_id = a.chain_id and r.status = 'done' and a.block_number between r.from_block and r.to_block))::int as orphan_rows,
      (select count(*) from blocks b where b.chain_id = ${chainId} and not exists (
        select 1 from ranges r where r.chain_id = b.chain_id and r.status = 'done' and b.number between r.from_block and r.to_block))::int as orphan_blocks,
      (select count(*) from ranges r where r.chain_id = ${chainId} and r.status = 'done'
        -- blocks far below the checkpoint are pruned (follower/prune.ts): ranges above the lowest kept
        and r.from_block >= (select coalesce(min(number), 0) from blocks where chain_id = ${chainId})
        and (select count(*) from blocks b where b.chain_id = r.chain_id and b.number between r.from_block and r.to_block) <> r.to_block - r.from_block + 1)::int as short_ranges,
      (select count(*) from chain_finality f where f.chain_id = ${chainId} and not exists (
        select 1 from ranges r where r.chain_id = f.chain_id and r.status = 'done' and r.to_block = f.final_through))::int as final_not_done`
  expect(state, 'rows, blocks or the final boundary outside the ranges done').toEqual({ orphan_rows: 0, orphan_blocks: 0, short_ranges: 0, final_not_done: 0 })
}

/** The highest block committed in bulk (chain_finality), or undefined before the first bulk commit. */
export async function finalThroughOf(db: Database, chainId: number): Promise<number | undefined> {
  const [row] = await db.$client<{ final_through: number }[]>`select final_through::float8 as final_through from chain_finality where chain_id = ${chainId}`
  return row?.final_through
}
