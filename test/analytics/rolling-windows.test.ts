import { getAddress } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readCodeStats } from '../../src/analytics/code-stats.js'
import { readLeaderboard } from '../../src/analytics/leaderboard.js'
import { readSummary } from '../../src/analytics/summary.js'
import { resolveDayWindow } from '../../src/analytics/window.js'
import { addDays, DAY_MS, dayOf, HOUR_MS } from '../../src/store/buckets.js'
import { rollbackAbove } from '../../src/store/rollback.js'
import { cutAndCommit, senderAddress, type TestAttribution } from '../support/ranges.js'
import { boundsOf, type Bounds } from '../support/final-exact.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'
import { createRollingWindows, type RollingWindows } from '../../src/store/rolling-windows.js'

/**
 * The rolling windows (leaderboard, active codes, unique senders) against
 * the attribution rows themselves, as time moves on by an hour, days and
 * more than a window: after commits spread over 40 days, commits made while
 * the windows stand, a reorg rollback, and a move to a clock far ahead.
 * Every figure of every window, per chain and for both, and every code's
 * distinct senders per day and over its window, in every chain and registry
 * scope, must equal what a count over the rows gives for the same `now`.
 */
const CHAINS = [1, 2]
const WINDOWS = ['24h', '7d', '30d', 'all'] as const
const CUSTOM = { chainId: 8453, address: '0x00000000000000000000000000000000000000Aa' as const }
const CUSTOM_NS = `8453:${CUSTOM.address.toLowerCase()}`
const CODES = ['alpha', 'beta', 'gamma', 'delta']
const T0 = Date.now()

let database: TestDatabase
let windows: RollingWindows
const nextBlock = new Map<number, number>(CHAINS.map((chainId) => [chainId, 1]))

/** Deterministic pseudo-random items: codes skewed, a custom namespace, reverts, UserOperations, 9 senders. */
function itemsBetween(chainId: number, fromMs: number, untilMs: number, count: number, seed: number): TestAttribution[] {
  return Array.from({ length: count }, (_, index) => {
    const n = (seed * 7919 + index * 104729) % 1_000_003
    return {
      tx: `c${chainId}s${seed}i${index}`,
      code: [CODES[0]!, ...CODES][n % 5]!,
      sender: senderAddress(1 + (n % 9)),
      timestamp: Math.floor((fromMs + ((untilMs - fromMs) * index) / count) / 1000),
      block: 0,
      kind: n % 4 === 0 ? 'userOperation' : 'transaction',
      status: n % 7 === 0 ? 'reverted' : 'success',
      ...(n % 6 === 0 ? { registry: CUSTOM } : {}),
    }
  })
}

/** Commits the items in ranges of five blocks, one item per block, as the pipeline would. */
async function commitItems(chainId: number, items: TestAttribution[]) {
  for (let start = 0; start < items.length; start += 5) {
    const fromBlock = nextBlock.get(chainId)!
    const slice = items.slice(start, start + 5).map((item, offset) => ({ ...item, block: fromBlock + offset }))
    nextBlock.set(chainId, fromBlock + 5)
    const outcome = await cutAndCommit(database.db, { chainId, fromBlock, toBlock: fromBlock + 4, branch: 'a', items: slice })
    expect(outcome).toEqual({ committed: true, inserted: slice.length })
  }
}

const registryOf = `case when registry_address is null then 'canonical' else registry_chain_id::text || ':' || lower(registry_address) end`

/** The figures counted over the attribution rows: what the windows must hold. */
async function truthOf(window: (typeof WINDOWS)[number], chainId: number | undefined, now: Date) {
  const sql = database.db.$client
  const { current, previous, sendersFrom } = boundsOf(window, now)
  const inBounds = (bounds: Bounds) => sql`
    ${Number.isFinite(bounds.from) ? sql`block_timestamp >= ${new Date(bounds.from).toISOString()}::timestamptz` : sql`true`}
    and ${Number.isFinite(bounds.until) ? sql`block_timestamp < ${new Date(bounds.until).toISOString()}::timestamptz` : sql`true`}
    and ${chainId === undefined ? sql`true` : sql`chain_id = ${chainId}`}`
  const totals = (bounds: Bounds) => sql<{ code: string; registry: string; transactions: number; userOperations: number; reverted: number }[]>`
    select code, ${sql.unsafe(registryOf)} as registry,
      count(*) filter (where status = 'success' and kind = 'transaction')::int as transactions,
      count(*) filter (where status = 'success' and kind = 'userOperation')::int as "userOperations",
      count(*) filter (where status = 'reverted')::int as reverted
    from attributions where ${inBounds(bounds)} group by 1, 2`
  const rows = await totals(current)
  const before = previous ? await totals(previous) : []
  const [senders] = await sql<{ count: number }[]>`
    select count(distinct sender)::int as count from attributions
    where ${inBounds({ from: sendersFrom, until: Infinity })}`
  const previousOf = new Map(before.map((row) => [`${row.code} ${row.registry}`, row.transactions + row.userOperations]))
  return {
    leaderboard: rows
      .filter((row) => row.transactions + row.userOperations > 0)
      .map((row) => ({ ...row, registry: eip55Registry(row.registry), total: row.transactions + row.userOperations, previousTotal: previous ? (previousOf.get(`${row.code} ${row.registry}`) ?? 0) : null }))
      .sort(byKey),
    activeCodes: rows.length,
    uniqueSenders: senders!.count,
  }
}

/** Answers spell a custom registry's address EIP-55; the SQL truth reads it lowercase. */
const eip55Registry = (registry: string) => {
  const [chainId, address] = registry.split(':')
  return address === undefined ? registry : `${chainId}:${getAddress(address)}`
}

const byKey = (a: { code: string; registry: string }, b: { code: string; registry: string }) =>
  `${a.code} ${a.registry}` < `${b.code} ${b.registry}` ? -1 : 1

async function expectWindowsExact(now: Date) {
  for (const window of WINDOWS) {
    for (const chainId of [undefined, ...CHAINS]) {
      const label = `${window}, chain ${chainId ?? 'all'}, now ${now.toISOString()}`
      const truth = await truthOf(window, chainId, now)
      const board = await readLeaderboard(windows, { window, chainId, limit: 100, includeInvalid: true, now })
      const entries = board.entries
        .map(({ code, registry, transactions, userOperations, reverted, total, previousTotal }) => ({ code, registry, transactions, userOperations, reverted, total, previousTotal }))
        .sort(byKey)
      expect(entries, label).toEqual(truth.leaderboard)
      const summary = await readSummary(windows, { window, chainId, now })
      expect({ activeCodes: summary.totals.activeCodes, uniqueSenders: summary.totals.uniqueSenders }, label).toEqual({
        activeCodes: truth.activeCodes,
        uniqueSenders: truth.uniqueSenders,
      })
    }
  }
  await expectCodeSendersExact(now)
}

/** A code's distinct senders per day and over its window (the default 30 days, kept rolling, and a custom week), in every scope. */
async function expectCodeSendersExact(now: Date) {
  const sql = database.db.$client
  const dayWindows = [resolveDayWindow({}, now), resolveDayWindow({ from: addDays(dayOf(now), -9), to: addDays(dayOf(now), -3) }, now)]
  for (const code of CODES) {
    for (const chainId of [undefined, ...CHAINS]) {
      for (const registry of [undefined, 'canonical', CUSTOM_NS]) {
        for (const window of dayWindows) {
          const filter = sql`code = ${code} and (block_timestamp at time zone 'UTC')::date between ${window.from} and ${window.to}
            and ${chainId === undefined ? sql`true` : sql`chain_id = ${chainId}`}
            and ${registry === undefined ? sql`true` : sql`${sql.unsafe(registryOf)} = ${registry}`}`
          const [overall] = await sql<{ count: number }[]>`select count(distinct sender)::int as count from attributions where ${filter}`
          const perDay = await sql<{ day: string; count: number }[]>`
            select (block_timestamp at time zone 'UTC')::date::text as day, count(distinct sender)::int as count from attributions where ${filter} group by 1`
          const stats = await readCodeStats(database.db, windows, { code, window, chainId, registry, now })
          const label = `${code}, chain ${chainId ?? 'all'}, registry ${registry ?? 'any'}, ${window.from}…${window.to}, now ${now.toISOString()}`
          expect(stats.uniqueSenders, label).toBe(overall!.count)
          expect(stats.daily.filter((point) => point.uniqueSenders > 0).map(({ day, uniqueSenders }) => ({ day, count: uniqueSenders })), label).toEqual(
            perDay.sort((a, b) => (a.day < b.day ? -1 : 1)),
          )
        }
      }
    }
  }
}

beforeAll(async () => {
  database = await createTestDatabase('rolling')
  // one per process, as the server has: reads between boundaries skip the check
  windows = createRollingWindows(database.db.$client)
  // history over the 40 days before now, committed before any window is built
  for (const chainId of CHAINS) await commitItems(chainId, itemsBetween(chainId, T0 - 40 * DAY_MS, T0, 60, chainId))
}, 60_000)

afterAll(async () => {
  await database?.drop()
})

describe('rolling windows', () => {
  it('are built from the totals on first read, exact for every window and chain', async () => {
    await expectWindowsExact(new Date(T0))
  })

  it('count commits made while they stand, and move by an hour exactly', async () => {
    for (const chainId of CHAINS) await commitItems(chainId, itemsBetween(chainId, T0 - 2 * HOUR_MS, T0 + HOUR_MS, 15, 10 + chainId))
    await expectWindowsExact(new Date(T0 + HOUR_MS))
    await expectWindowsExact(new Date(T0 + 3 * HOUR_MS))
  })

  it('give back what a reorg rolls back', async () => {
    const reserved = await database.db.$client.reserve()
    try {
      const result = await rollbackAbove(reserved, 1, nextBlock.get(1)! - 11)
      expect(result.ranges).toBe(2)
    } finally {
      reserved.release()
    }
    await expectWindowsExact(new Date(T0 + 3 * HOUR_MS))
  })

  it('move by days, past whole windows, and keep counting new commits', async () => {
    await expectWindowsExact(new Date(T0 + 2 * DAY_MS))
    for (const chainId of CHAINS) await commitItems(chainId, itemsBetween(chainId, T0 + DAY_MS, T0 + 9 * DAY_MS, 10, 20 + chainId))
    await expectWindowsExact(new Date(T0 + 9 * DAY_MS))
    await expectWindowsExact(new Date(T0 + 45 * DAY_MS))
    await expectWindowsExact(new Date(T0 + 100 * DAY_MS))
  })
})
