import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Database } from '../../src/db/client.js'
import { commitRange } from '../../src/store/commit.js'
import { rollbackAbove } from '../../src/store/rollback.js'
import { createRollingWindows } from '../../src/store/rolling-windows.js'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { cutRange, senderAddress, type TestAttribution } from '../support/ranges.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'

/**
 * The every-chain scope is written only once a second chain has
 * aggregates. Until then "every chain" reads the only chain's rows; when a
 * second chain commits, the scope is built from the first chain's rows.
 * Checked against a database that kept the scope from the start: after the
 * same commits and the same rollback, every aggregate row is the same, and
 * the figures a user reads are exact.
 */
const HOUR = 3600
const T = Math.floor(Date.now() / 1000 / HOUR) * HOUR - 2 * HOUR + 60
const A = 31
const B = 32

type Item = Omit<TestAttribution, 'timestamp' | 'sender'> & { sender: number }
const item = (tx: string, block: number, code: string, sender: number, extra: Partial<Item> = {}): Item => ({ tx, block, code, sender, ...extra })

const RANGES: Record<number, Array<{ fromBlock: number; toBlock: number; items: Item[] }>> = {
  [A]: [
    { fromBlock: 1, toBlock: 10, items: [item('a1', 2, 'alpha', 1), item('a2', 3, 'alpha', 2), item('a3', 4, 'beta', 1)] },
    { fromBlock: 11, toBlock: 20, items: [item('a4', 12, 'alpha', 3, { status: 'reverted' }), item('a5', 13, 'gamma', 2, { kind: 'userOperation' })] },
  ],
  [B]: [
    { fromBlock: 1, toBlock: 10, items: [item('b1', 5, 'alpha', 1), item('b2', 6, 'beta', 4)] },
    { fromBlock: 11, toBlock: 20, items: [item('b3', 14, 'gamma', 2), item('b4', 15, 'alpha', 5)] },
  ],
}

let lazy: TestDatabase
let keptFromStart: TestDatabase
let api: TestApi

async function commitChain(db: Database, chainId: number) {
  for (const range of RANGES[chainId]!) {
    const items = range.items.map((i) => ({ ...i, tx: `${chainId}${i.tx}`, sender: senderAddress(i.sender), timestamp: T + i.block }))
    const result = await cutRange(db, { chainId, fromBlock: range.fromBlock, toBlock: range.toBlock, branch: 'a', items })
    expect(await commitRange(db, result)).toEqual({ committed: true, inserted: items.length })
  }
}

async function rollback(db: Database, chainId: number, ancestor: number) {
  const reserved = await db.$client.reserve()
  try {
    return await rollbackAbove(reserved, chainId, ancestor)
  } finally {
    reserved.release()
  }
}

const scopeState = async (db: Database) => (await db.$client`select kept, only_chain from every_chain_scope`)[0]

/** Every row of the tables that hold scopes, in key order. */
async function scopedRows(db: Database) {
  const sql = db.$client
  return {
    codeDayRefs: await sql`select code, day::text, sender, refs from code_day_sender_refs order by 1, 2, 3`,
    codeDayCounts: await sql`select code, registry, chain_id, day::text, senders from code_daily_sender_counts order by 1, 2, 3, 4`,
    codeWindows: await sql`select window_name, scope, code, registry, transactions, user_operations, reverted from code_window_totals order by 1, 2, 3, 4`,
    senderRefs: await sql`select window_name, sender, refs from window_sender_refs order by 1, 2`,
    senderCounts: await sql`select window_name, scope, senders from sender_window_counts order by 1, 2`,
    codeSenderRefs: await sql`select window_name, code, sender, refs from window_code_sender_refs order by 1, 2, 3`,
    codeSenderCounts: await sql`select window_name, code, registry, chain_id, senders from code_sender_window_counts order by 1, 2, 3, 4`,
  }
}

const get = async (path: string) => {
  const response = await request(`${api.url}${path}`)
  expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(200)
  return response.body
}

/** What a user reads for every chain together. */
async function everyChainFigures() {
  const alpha = await get('/v1/analytics/codes/alpha')
  return {
    summary: (await get('/v1/analytics/summary?window=7d')).totals,
    leaderboard: (await get('/v1/analytics/leaderboard?window=24h')).entries.map((e: { code: string; total: number; reverted: number }) => [e.code, e.total, e.reverted]),
    alpha: [alpha.totals.total, alpha.totals.reverted, alpha.uniqueSenders],
  }
}

beforeAll(async () => {
  lazy = await createTestDatabase('every_chain_lazy')
  keptFromStart = await createTestDatabase('every_chain_kept')
  await keptFromStart.db.$client`update every_chain_scope set kept = true`
  // windows ready before the commits, so the commits move them
  await createRollingWindows(lazy.db.$client).ensureCurrent()
  await createRollingWindows(keptFromStart.db.$client).ensureCurrent()
  api = await startTestApi({ db: lazy.db, databaseUrl: lazy.url, redisUrl: inject('redisUrl') })
}, 60_000)

afterAll(async () => {
  await api?.close()
  await lazy?.drop()
  await keptFromStart?.drop()
})

describe('the every-chain scope', () => {
  it('is the only chain’s rows while one chain has aggregates', async () => {
    await commitChain(lazy.db, A)
    await commitChain(keptFromStart.db, A)
    expect(await scopeState(lazy.db)).toEqual({ kept: false, only_chain: A })
    expect((await lazy.db.$client`select count(*)::int as n from code_window_totals where scope = 0`)[0]!.n).toBe(0)
    expect(await everyChainFigures()).toEqual({
      summary: { attributions: 5, transactions: 3, userOperations: 1, total: 4, reverted: 1, activeCodes: 3, uniqueSenders: 3 },
      leaderboard: [['alpha', 2, 1], ['beta', 1, 0], ['gamma', 1, 0]],
      alpha: [2, 1, 3],
    })
  })

  it('is built exactly when a second chain commits, and kept from then on', async () => {
    await commitChain(lazy.db, B)
    await commitChain(keptFromStart.db, B)
    expect(await scopeState(lazy.db)).toEqual({ kept: true, only_chain: A })
    expect(await scopedRows(lazy.db)).toEqual(await scopedRows(keptFromStart.db))
    expect(await everyChainFigures()).toEqual({
      summary: { attributions: 9, transactions: 7, userOperations: 1, total: 8, reverted: 1, activeCodes: 3, uniqueSenders: 5 },
      leaderboard: [['alpha', 4, 1], ['beta', 2, 0], ['gamma', 2, 0]],
      alpha: [4, 1, 4],
    })
    expect((await get(`/v1/analytics/codes/alpha?chainId=${A}`)).uniqueSenders).toBe(3)
  })

  it('takes a rolled-back range out of every scope', async () => {
    expect(await rollback(lazy.db, B, 10)).toEqual({ ranges: 1, attributions: 2, malformed: 0 })
    expect(await rollback(keptFromStart.db, B, 10)).toEqual({ ranges: 1, attributions: 2, malformed: 0 })
    expect(await scopedRows(lazy.db)).toEqual(await scopedRows(keptFromStart.db))
    const figures = await everyChainFigures()
    expect([figures.summary.attributions, figures.summary.uniqueSenders, figures.alpha]).toEqual([7, 4, [3, 1, 3]])
  })
})
