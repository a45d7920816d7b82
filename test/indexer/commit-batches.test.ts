import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { createCommitBatcher } from '../../src/pipeline/commit-batches.js'
import { createIndexStore, type IndexStore } from '../../src/store/index-store.js'
import { commitRange, commitRanges, type RangeResult } from '../../src/store/commit.js'
import { ATTRIBUTION_EVENTS_CHANNEL, eventsAfter, type EventsNotice } from '../../src/store/events.js'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { cutRange, senderAddress, type TestAttribution } from '../support/ranges.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'
import { until } from '../support/poll.js'

/**
 * Several ranges committed in one statement (what the worker does while it
 * catches up) leave exactly what committing them one by one leaves, with
 * one stream event per range and code and one notice per range; a batch
 * with a range no longer pending writes nothing. The worker's batcher
 * groups only full ranges while others are on their way, and sends a
 * failing or stale batch back to single commits.
 */
const HOUR = 3600
const T = Math.floor(Date.now() / 1000 / HOUR) * HOUR - 2 * HOUR + 60
const RANGE_SIZE = 10

let database: TestDatabase
let api: TestApi

/** Four ranges of 10 blocks whose codes and senders recur across ranges, so a batch shares aggregate rows. */
function fourRanges(): Array<{ fromBlock: number; toBlock: number; items: Array<Omit<TestAttribution, 'timestamp'>> }> {
  const tx = (label: string, block: number, code: string, sender: number, extra: Partial<TestAttribution> = {}) => ({
    tx: label, block, code, sender: senderAddress(sender), ...extra,
  })
  return [
    { fromBlock: 1, toBlock: 10, items: [tx('a1', 2, 'alpha', 1), tx('a2', 3, 'alpha', 2), tx('a3', 3, 'beta', 1)] },
    { fromBlock: 11, toBlock: 20, items: [tx('b1', 12, 'alpha', 1), tx('b2', 15, 'gamma', 3, { status: 'reverted' })] },
    { fromBlock: 21, toBlock: 30, items: [tx('c1', 22, 'beta', 2), tx('c2', 29, 'alpha', 4, { kind: 'userOperation' })] },
    { fromBlock: 31, toBlock: 40, items: [tx('d1', 33, 'gamma', 3), tx('d2', 40, 'alpha', 1)] },
  ]
}

async function cutFour(chainId: number, ranges = fourRanges()): Promise<RangeResult[]> {
  const results: RangeResult[] = []
  for (const range of ranges) {
    const items = range.items.map((item) => ({ ...item, tx: `${chainId}${item.tx}`, timestamp: T + item.block }))
    results.push(await cutRange(database.db, { chainId, fromBlock: range.fromBlock, toBlock: range.toBlock, branch: 'a', items }))
  }
  return results
}

const get = async (path: string) => {
  const response = await request(`${api.url}${path}`)
  expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(200)
  return response.body
}

/** What a user reads of one chain: summaries, leaderboard, each code's figures. */
async function figuresOf(chainId: number) {
  const codes = await Promise.all(
    ['alpha', 'beta', 'gamma'].map(async (code) => {
      const body = await get(`/v1/analytics/codes/${code}?chainId=${chainId}`)
      return { code, totals: body.totals, uniqueSenders: body.uniqueSenders, daily: body.daily.filter((point: { transactions: number }) => point.transactions > 0) }
    }),
  )
  return {
    summary24h: (await get(`/v1/analytics/summary?window=24h&chainId=${chainId}`)).totals,
    summaryAll: (await get(`/v1/analytics/summary?window=all&chainId=${chainId}`)).totals,
    leaderboard: (await get(`/v1/analytics/leaderboard?window=7d&chainId=${chainId}`)).entries,
    codes,
  }
}

const statusOf = async (chainId: number) =>
  (await database.db.$client<{ from_block: string; status: string }[]>`select from_block, status from ranges where chain_id = ${chainId} order by from_block`).map(
    (row) => `${row.from_block}:${row.status}`,
  )

/** Distinct commit times of a chain's ranges: one per statement that committed them. */
const commitStatements = async (chainId: number) =>
  (await database.db.$client<{ n: number }[]>`select count(distinct done_at)::int as n from ranges where chain_id = ${chainId} and status = 'done'`)[0]!.n

beforeAll(async () => {
  database = await createTestDatabase('commit_batches')
  api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: inject('redisUrl') })
}, 60_000)

afterAll(async () => {
  await api?.close()
  await database?.drop()
})

describe('commitRanges', () => {
  it('runs on connections without JIT compilation, which a commit statement paid for and never gained from', async () => {
    const [row] = await database.db.$client<{ jit: string }[]>`show jit`
    expect(row?.jit).toBe('off')
  })

  it('leaves exactly what single commits leave, with an event per range and code and a notice per range', async () => {
    const notices: EventsNotice[] = []
    const listening = await database.db.$client.listen(ATTRIBUTION_EVENTS_CHANNEL, (payload) => notices.push(JSON.parse(payload) as EventsNotice))
    try {
      for (const result of await cutFour(101)) await commitRange(database.db, result)
      expect(await commitRanges(database.db, await cutFour(102))).toEqual([
        { committed: true, inserted: 3 },
        { committed: true, inserted: 2 },
        { committed: true, inserted: 2 },
        { committed: true, inserted: 2 },
      ])
      const single = await figuresOf(101)
      expect(await figuresOf(102)).toEqual(single)
      expect(single.summaryAll).toEqual({ attributions: 9, transactions: 7, userOperations: 1, total: 8, reverted: 1, activeCodes: 3, uniqueSenders: 4 })
      expect(single.codes.map(({ code, totals, uniqueSenders }) => [code, totals.total, totals.reverted, uniqueSenders])).toEqual([
        ['alpha', 5, 0, 3],
        ['beta', 2, 0, 2],
        ['gamma', 1, 1, 1],
      ])

      await until('four notices of chain 102', () => notices.filter((notice) => notice.chainId === 102).length >= 4, { intervalMs: 20 })
      const batchNotices = notices.filter((notice) => notice.chainId === 102)
      expect(batchNotices.map((notice) => notice.fromBlock).sort((a, b) => a - b)).toEqual([1, 11, 21, 31])
      // a notice says that something committed; the events are read by id (their ids are given at commit)
      const { events } = await eventsAfter(database.db.$client, { afterId: 0, code: undefined, limit: 1_000 })
      expect(events.filter((event) => event.chainId === 102).map((event) => [event.fromBlock, event.toBlock, event.code, event.attributions]).sort()).toEqual(
        [
          [1, 10, 'alpha', 2],
          [1, 10, 'beta', 1],
          [11, 20, 'alpha', 1],
          [11, 20, 'gamma', 1],
          [21, 30, 'alpha', 1],
          [21, 30, 'beta', 1],
          [31, 40, 'alpha', 1],
          [31, 40, 'gamma', 1],
        ].sort(),
      )
    } finally {
      await listening.unlisten()
    }
  })

  it('writes nothing for a batch with a range no longer pending, and nothing the second time', async () => {
    const results = await cutFour(103)
    expect(await commitRange(database.db, results[0]!)).toEqual({ committed: true, inserted: 3 })
    expect(await commitRanges(database.db, results.slice(0, 2))).toEqual([
      { committed: false, inserted: 0 },
      { committed: false, inserted: 0 },
    ])
    expect(await statusOf(103)).toEqual(['1:done', '11:pending', '21:pending', '31:pending'])
    expect((await get('/v1/analytics/summary?window=all&chainId=103')).totals.attributions).toBe(3)

    expect((await commitRanges(database.db, results.slice(1))).map((outcome) => outcome.committed)).toEqual([true, true, true])
    expect(await commitRanges(database.db, results.slice(1))).toEqual([
      { committed: false, inserted: 0 },
      { committed: false, inserted: 0 },
      { committed: false, inserted: 0 },
    ])
    expect((await get('/v1/analytics/summary?window=all&chainId=103')).totals.attributions).toBe(9)
  })
})

describe('the worker’s commit batcher', () => {
  const batcher = (active: () => number, maxWaitMs: number, splits: Array<[number, string | undefined]> = [], rangeSize = RANGE_SIZE) =>
    createCommitBatcher({
      db: database.db,
      maxRanges: 4,
      maxWaitMs,
      rangeSize,
      activeRanges: active,
      onSplit: (ranges, error) => splits.push([ranges, error?.message]),
    })

  it('lets full ranges wait for the others on their way and commits them in one statement', async () => {
    const results = await cutFour(201)
    // four ranges active, none of them committed yet: each waits for the rest (the wait bound is far away)
    const commits = batcher(() => 4, 600_000)
    const outcomes = await Promise.all(results.map((result) => commits.commit(result)))
    expect(outcomes.map((outcome) => outcome.inserted)).toEqual([3, 2, 2, 2])
    expect(await commitStatements(201)).toBe(1)
  })

  it('commits a range at once when it is short of a full range (at the head) or nothing else is on its way', async () => {
    const [first, second] = await cutFour(202)
    // where ranges are 20 blocks, a 10-block one was cut at the head: it does not wait, whatever else is active
    const atHead = batcher(() => 2, 600_000, [], 20)
    expect(await atHead.commit(first!)).toEqual({ committed: true, inserted: 3 })
    let active = 2
    const waiting = batcher(() => active, 600_000)
    const pending = waiting.commit(second!)
    active = 1
    waiting.rangeLeft()
    expect(await pending).toEqual({ committed: true, inserted: 2 })
    expect(await commitStatements(202)).toBe(2)
  })

  it('keeps two statements in flight at most: ranges ready meanwhile wait for them and share the next', async () => {
    const [a, b, c, d] = await cutFour(205)
    const store = createIndexStore({ db: database.db })
    let release = () => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    const statements: number[] = []
    let inFlight = 0
    let mostInFlight = 0
    const gated: IndexStore = {
      ...store,
      async commitRanges(results) {
        statements.push(results.length)
        mostInFlight = Math.max(mostInFlight, ++inFlight)
        try {
          // the first two statements are held until the others have queued
          if (statements.length <= 2) await gate
          return await store.commitRanges(results)
        } finally {
          inFlight--
        }
      },
    }
    let active = 1
    const commits = createCommitBatcher({ db: database.db, store: gated, maxRanges: 4, maxWaitMs: 600_000, rangeSize: RANGE_SIZE, activeRanges: () => active })
    // nothing else on its way each time: each of the first two ranges starts its own statement at once
    const first = commits.commit(a!)
    active = 2
    const second = commits.commit(b!)
    active = 4
    const rest = Promise.all([c!, d!].map((result) => commits.commit(result)))
    // the last of them would have started a third statement at once (nothing else on its way)
    expect(statements).toEqual([1, 1])
    // the first two ranges have left the worker; their statements have not ended yet
    active = 2
    release()
    expect([await first, await second]).toEqual([
      { committed: true, inserted: 3 },
      { committed: true, inserted: 2 },
    ])
    expect((await rest).map((outcome) => outcome.inserted)).toEqual([2, 2])
    expect(statements).toEqual([1, 1, 2])
    expect(mostInFlight).toBe(2)
    expect(await commitStatements(205)).toBe(3)
  })

  it('takes ranges into a batch while their rows fit in maxRows, and commits without waiting once they are there', async () => {
    const results = await cutFour(206)
    const statements: number[] = []
    const store = createIndexStore({ db: database.db })
    const counted: IndexStore = { ...store, commitRanges: (ranges) => (statements.push(ranges.length), store.commitRanges(ranges)) }
    // rows 3, 2, 2, 2: 5 rows fit the first two, the last two make the next batch
    const commits = createCommitBatcher({ db: database.db, store: counted, maxRanges: 4, maxRows: 5, maxWaitMs: 600_000, rangeSize: RANGE_SIZE, activeRanges: () => 4 })
    const outcomes = await Promise.all(results.map((result) => commits.commit(result)))
    expect(outcomes.map((outcome) => outcome.inserted)).toEqual([3, 2, 2, 2])
    expect(statements).toEqual([2, 2])
    expect(await commitStatements(206)).toBe(2)
  })

  it("hands each range's rows to a store that holds them (the commit thread) once it is ready, and batches by their count", async () => {
    const results = await cutFour(207)
    const store = createIndexStore({ db: database.db })
    const held = new Map<number, RangeResult['rows']>()
    const statements: Array<Array<number | undefined>> = []
    const holding: IndexStore = {
      ...store,
      hold(result) {
        held.set(result.job.fromBlock, result.rows)
        return { ...result, rows: [], heldRows: result.job.fromBlock }
      },
      commitRanges(ranges) {
        statements.push(ranges.map((range) => range.heldRows))
        return store.commitRanges(ranges.map(({ heldRows, ...range }) => ({ ...range, rows: held.get(heldRows!)! })))
      },
    }
    const commits = createCommitBatcher({ db: database.db, store: holding, maxRanges: 4, maxRows: 5, maxWaitMs: 600_000, rangeSize: RANGE_SIZE, activeRanges: () => 4 })
    const first = commits.commit(results[0]!)
    // the first range waits for others (the statement has not started), its rows already with the store
    expect([...held.keys()]).toEqual([1])
    expect(statements).toEqual([])
    const outcomes = await Promise.all([first, ...results.slice(1).map((result) => commits.commit(result))])
    expect(outcomes.map((outcome) => outcome.inserted)).toEqual([3, 2, 2, 2])
    // rows 3, 2, 2, 2 counted from what was held: 5 fit the first two, the last two make the next batch
    expect(statements).toEqual([
      [1, 11],
      [21, 31],
    ])
  })

  it('commits what waited once the wait bound passes', async () => {
    const [first] = await cutFour(203)
    const commits = batcher(() => 3, 50)
    expect(await commits.commit(first!)).toEqual({ committed: true, inserted: 3 })
  })

  it('commits a failing or stale batch range by range, so only the broken range fails', async () => {
    const results = await cutFour(204)
    expect(await commitRange(database.db, results[1]!)).toEqual({ committed: true, inserted: 2 })
    const broken: RangeResult = { ...results[2]!, blocks: [{ number: 25, hash: '0x01', parentHash: '0x02', timestamp: Number.NaN, txCount: 1 }] }
    const splits: Array<[number, string | undefined]> = []
    const commits = batcher(() => 4, 600_000, splits)
    const settled = await Promise.allSettled([results[0]!, results[1]!, broken, results[3]!].map((result) => commits.commit(result)))
    expect(settled.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value : (outcome.reason as Error).message))).toEqual([
      { committed: true, inserted: 3 },
      { committed: false, inserted: 0 },
      'Invalid time value',
      { committed: true, inserted: 2 },
    ])
    expect(splits).toEqual([[4, 'Invalid time value']])
    expect(await statusOf(204)).toEqual(['1:done', '11:done', '21:pending', '31:done'])
    expect((await get('/v1/analytics/summary?window=all&chainId=204')).totals.attributions).toBe(7)
  })
})
