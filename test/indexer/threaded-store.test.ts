import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RangeResult } from '../../src/store/commit.js'
import { createIndexStore } from '../../src/store/index-store.js'
import { rowPieces } from '../../src/store/row-pieces.js'
import { createThreadedIndexStore, HOLD_FROM_ROWS, type ThreadedIndexStore } from '../../src/store/threaded-store.js'
import { cutRange, senderAddress, type TestAttribution } from '../support/ranges.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'

/**
 * The daemon's commits on a thread of their own (store/threaded-store.ts):
 * what they leave is what the same commits leave in-process, on both
 * paths; a commit's failure reaches its caller with what callers read of
 * it; closing answers the commits held first.
 */

const DAY_S = 86_400
const NOW_S = Math.floor(Date.now() / 1000)

let inProcess: TestDatabase
let threaded: TestDatabase
let store: ThreadedIndexStore

beforeAll(async () => {
  ;[inProcess, threaded] = await Promise.all([createTestDatabase('thread_in_process'), createTestDatabase('thread_threaded')])
  // every range's rows sent ahead when held: the ranges here are of 30 rows
  store = createThreadedIndexStore({ databaseUrl: threaded.url, holdFromRows: 1 })
})

afterAll(async () => {
  await store?.close()
  await Promise.all([inProcess?.drop(), threaded?.drop()])
})

/** A range of `count` attributions, two codes and a few senders, some of them sharing a transaction's record. */
function items(fromBlock: number, count: number, timestamp: number): TestAttribution[] {
  return Array.from({ length: count }, (_, i) => ({
    tx: `t${fromBlock}-${i}`,
    code: i % 3 === 0 ? 'alpha' : 'beta',
    sender: senderAddress(1 + (i % 5)),
    timestamp,
    block: fromBlock + (i % 10),
    status: i % 7 === 0 ? 'reverted' : 'success',
  }))
}

/** The same range cut in both databases; `final` picks the bulk path. */
async function cutInBoth(fromBlock: number, final: boolean, timestamp: number): Promise<[RangeResult, RangeResult]> {
  const range = { chainId: 8453, fromBlock, toBlock: fromBlock + 9, branch: 'a', items: items(fromBlock, 30, timestamp) }
  const [a, b] = await Promise.all([cutRange(inProcess.db, range), cutRange(threaded.db, range)])
  return [
    { ...a, final },
    { ...b, final },
  ]
}

async function tablesOf({ db }: TestDatabase): Promise<Record<string, unknown[]>> {
  const dump: Record<string, unknown[]> = {}
  for (const table of ['ranges', 'attributions', 'attribution_suffixes', 'code_daily_totals', 'code_day_sender_refs', 'code_daily_sender_counts', 'chain_daily_senders', 'chain_daily_totals']) {
    const rows = await db.$client<{ row: string }[]>`select (to_jsonb(t) - 'id' - 'done_at' - 'created_at')::text as row from ${db.$client(table)} t`
    dump[table] = rows.map(({ row }) => row).sort()
  }
  return dump
}

describe('commits on a thread of their own', () => {
  it('leave every table as the same commits in-process, on the bulk path and the tip path', async () => {
    const local = createIndexStore({ db: inProcess.db })
    for (const [fromBlock, final, timestamp] of [
      [1, true, NOW_S - 40 * DAY_S],
      [11, true, NOW_S - 40 * DAY_S],
      [21, false, NOW_S - 60],
    ] as const) {
      const [mine, theirs] = await cutInBoth(fromBlock, final, timestamp)
      const [expected, outcomes] = await Promise.all([local.commitRanges([mine]), store.commitRanges([theirs])])
      expect(outcomes).toEqual(expected)
      expect(outcomes[0]).toEqual({ committed: true, inserted: 30 })
    }
    expect(await tablesOf(threaded)).toEqual(await tablesOf(inProcess))
  })

  it('commits ranges whose rows were sent ahead (hold) as the same ranges committed in-process', async () => {
    const local = createIndexStore({ db: inProcess.db })
    const cut = await Promise.all([121, 131].map((fromBlock) => cutInBoth(fromBlock, true, NOW_S - 40 * DAY_S)))
    const held = cut.map(([, theirs]) => store.hold(theirs))
    expect(held.map((result) => result.rows)).toEqual([[], []])
    const [expected, settled] = await Promise.all([local.commitRanges(cut.map(([mine]) => mine)), store.commitTogetherOrEach(held)])
    expect(settled).toEqual({ ranges: expected.map((outcome) => ({ outcome })) })
    expect(expected).toEqual([
      { committed: true, inserted: 30 },
      { committed: true, inserted: 30 },
    ])
    expect(await tablesOf(threaded)).toEqual(await tablesOf(inProcess))
  })

  it('commits a tip range whose rows were sent ahead as the same range committed in-process', async () => {
    const local = createIndexStore({ db: inProcess.db })
    const [mine, theirs] = await cutInBoth(201, false, NOW_S - 60)
    const [expected, outcome] = await Promise.all([local.commitRange(mine), store.commitRange(store.hold(theirs))])
    expect(outcome).toEqual(expected)
    expect(outcome).toEqual({ committed: true, inserted: 30 })
    expect(await tablesOf(threaded)).toEqual(await tablesOf(inProcess))
  })

  it('commits rows read a piece at a time (several pieces, on both paths) as the same rows held as objects', async () => {
    const [local, pieced] = [createIndexStore({ db: inProcess.db }), createIndexStore({ db: threaded.db })]
    for (const [fromBlock, final, timestamp] of [
      [211, true, NOW_S - 40 * DAY_S],
      [221, false, NOW_S - 60],
    ] as const) {
      const [mine, theirs] = await cutInBoth(fromBlock, final, timestamp)
      const asPieces = { ...theirs, rows: [], rowPieces: rowPieces(theirs.rows, 7) }
      expect(asPieces.rowPieces.pieces.length).toBeGreaterThan(2)
      expect(await pieced.commitRanges([asPieces])).toEqual(await local.commitRanges([mine]))
    }
    expect(await tablesOf(threaded)).toEqual(await tablesOf(inProcess))
  })

  it('keeps the rows of a range under HOLD_FROM_ROWS with its result', async () => {
    const defaults = createThreadedIndexStore({ databaseUrl: threaded.url })
    try {
      const [, range] = await cutInBoth(151, true, NOW_S - 40 * DAY_S)
      expect(range.rows.length).toBeLessThan(HOLD_FROM_ROWS)
      expect(defaults.hold(range)).toBe(range)
      expect(await defaults.commitRange(range)).toEqual({ committed: true, inserted: 30 })
    } finally {
      await defaults.close()
    }
  })

  it('fails a commit whose rows its thread never took (a thread started since they were sent), and writes nothing of it', async () => {
    const other = createThreadedIndexStore({ databaseUrl: threaded.url, holdFromRows: 1 })
    try {
      const [, range] = await cutInBoth(141, true, NOW_S - 40 * DAY_S)
      // a ticket of another thread stands for one the restarted thread never took
      const elsewhere = other.hold(range)
      await expect(store.commitRange(elsewhere)).rejects.toThrow(/does not hold the rows of range 141-150/)
      const [status] = await threaded.db.$client<{ status: string }[]>`select status from ranges where from_block = 141`
      expect(status?.status).toBe('pending')
      expect(await store.commitRange(range)).toEqual({ committed: true, inserted: 30 })
    } finally {
      await other.close()
    }
  })

  it('answers a range no longer pending as not committed, and commits nothing twice', async () => {
    const [, again] = await cutInBoth(31, true, NOW_S - 40 * DAY_S)
    expect(await store.commitRange(again)).toEqual({ committed: true, inserted: 30 })
    expect(await store.commitRange(again)).toEqual({ committed: false, inserted: 0 })
  })

  it("hands a failed commit's name, message and driver code to its caller", async () => {
    const [, broken] = await cutInBoth(41, false, NOW_S - 60)
    // a block without a hash: the blocks table refuses it (not null), and the whole commit with it
    const failing = store.commitRange({ ...broken, blocks: [{ number: 41, hash: null as never, parentHash: broken.job.parentHash, timestamp: NOW_S - 60, txCount: 1 }] })
    await expect(failing).rejects.toMatchObject({ name: 'PostgresError', code: '23502', message: expect.stringContaining('null value') })
    const [range] = await threaded.db.$client<{ status: string }[]>`select status from ranges where from_block = 41`
    expect(range?.status).toBe('pending')
  })

  it('commits a failing batch range by range on the thread: each range its own outcome or error, the batch error told', async () => {
    const [stale, broken, fine] = await Promise.all([91, 101, 111].map(async (fromBlock) => (await cutInBoth(fromBlock, true, NOW_S - 40 * DAY_S))[1]))
    expect(await store.commitRange(stale!)).toEqual({ committed: true, inserted: 30 })
    const unhashed = { ...broken!, blocks: [{ number: 101, hash: null as never, parentHash: broken!.job.parentHash, timestamp: NOW_S - 60, txCount: 1 }] }
    const { ranges, split } = await store.commitTogetherOrEach([stale!, unhashed, fine!])
    expect(split).toBeDefined()
    expect(ranges[0]).toEqual({ outcome: { committed: false, inserted: 0 } })
    expect(ranges[1]!.error).toMatchObject({ name: 'PostgresError', code: '23502' })
    expect(ranges[2]).toEqual({ outcome: { committed: true, inserted: 30 } })
    const statuses = await threaded.db.$client<{ from_block: string; status: string }[]>`
      select from_block::text, status from ranges where from_block in (91, 101, 111) order by from_block::bigint`
    expect(statuses.map(({ from_block, status }) => `${from_block}:${status}`)).toEqual(['91:done', '101:pending', '111:done'])
  })

  it('refuses what cannot cross to the thread without losing the commits after it', async () => {
    const [, range] = await cutInBoth(51, true, NOW_S - 40 * DAY_S)
    await expect(store.commitRange({ ...range, job: { ...range.job, cannotClone: () => {} } as never })).rejects.toThrow(/could not be cloned/)
    expect(await store.commitRange(range)).toEqual({ committed: true, inserted: 30 })
  })

  it('answers the commits it holds before it closes, and refuses commits after', async () => {
    const closing = createThreadedIndexStore({ databaseUrl: threaded.url })
    const ranges = await Promise.all([61, 71, 81].map(async (fromBlock) => (await cutInBoth(fromBlock, true, NOW_S - 40 * DAY_S))[1]))
    const commits = ranges.map((range) => closing.commitRange(range))
    await closing.close()
    expect(await Promise.all(commits)).toEqual(ranges.map(() => ({ committed: true, inserted: 30 })))
    await expect(closing.commitRange(ranges[0]!)).rejects.toThrow(/closing/)
  })
})
