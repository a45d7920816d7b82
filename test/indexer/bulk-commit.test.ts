import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRandom } from '../../devnet/random.js'
import { commitFinalRanges } from '../../src/store/bulk-commit.js'
import { commitRanges, type RangeResult } from '../../src/store/commit.js'
import { createEveryChainMemory } from '../../src/store/every-chain.js'
import { createFinalMembers } from '../../src/store/final-members.js'
import { createRollingWindows } from '../../src/store/rolling-windows.js'
import { codeSenderCounts } from '../../src/store/code-totals.js'
import { chainSendersFirstDay } from '../support/final-exact.js'
import { rollbackAbove } from '../../src/store/rollback.js'
import { attributionRow, labelHash, senderAddress, type TestAttribution } from '../support/ranges.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'

/**
 * The bulk commit (issue 40) against the tip path's statement: the same
 * ranges, committed in the same batches, one database each, leave every
 * table the same — rows, suffixes, blocks, every total, the distinct
 * senders (which scopes hold each member: final rows hold it without a
 * count, final-refs.ts) and their counts, the rolling windows, the
 * stream's events — across days, hours still kept and long gone, two
 * chains (the every-chain scope built in between), custom registries,
 * reverted transactions, UserOperations and suffixes with two codes. Tip
 * rows above final ones, committed before or after them and rolled back,
 * leave what they leave in the tip path's database.
 */

const NOW_S = Math.floor(Date.now() / 1000)
const DAY_S = 86_400
/** Block times: 40 days ago (outside every window but 'all'), 3 days ago (7d/30d, hourly kept), the last hour. */
const ERAS = [NOW_S - 40 * DAY_S, NOW_S - 3 * DAY_S - 3600, NOW_S - 1800]
const CODES = ['alpha', 'beta', 'gamma', 'delta', 'Invalid-Code', 'epsilon']
const CUSTOM = { chainId: 8453, address: '0xAbCdEf0000000000000000000000000000000001' as const }

let tip: TestDatabase
let bulk: TestDatabase

beforeAll(async () => {
  ;[tip, bulk] = await Promise.all([createTestDatabase('bulk_tip'), createTestDatabase('bulk_bulk')])
  // every window ready, as a running indexer keeps them: rows then fall in the windows their times say
  for (const database of [tip, bulk]) await createRollingWindows(database.db.$client).ensureCurrent(new Date())
})

afterAll(async () => {
  await Promise.all([tip?.drop(), bulk?.drop()])
})

type Range = { chainId: number; fromBlock: number; toBlock: number; era: number }

/** A range's rows: ~40 records, some with two codes, drawn from a seeded generator (the same for both databases). */
function rangeResult({ chainId, fromBlock, toBlock, era }: Range): RangeResult {
  const random = createRandom(chainId * 1000 + fromBlock)
  const rows: RangeResult['rows'] = []
  for (let i = 0; i < 40; i++) {
    const block = fromBlock + random.int(toBlock - fromBlock + 1)
    const kind = random.chance(0.3) ? 'userOperation' : 'transaction'
    const item: TestAttribution = {
      tx: `${chainId}-${fromBlock}-${i}`,
      code: random.pick(CODES),
      sender: senderAddress(1 + random.int(12)),
      timestamp: era + (block - fromBlock) * 2,
      block,
      kind,
      status: random.chance(0.15) ? 'reverted' : 'success',
      ...(random.chance(0.2) && { registry: CUSTOM }),
    }
    const first = attributionRow(item)
    rows.push(first)
    const second = random.pick(CODES)
    if (random.chance(0.2) && second !== item.code) rows.push({ ...first, code: second })
  }
  rows.sort((a, b) => a.record.blockNumber - b.record.blockNumber)
  const blocks = Array.from({ length: toBlock - fromBlock + 1 }, (_, i) => ({
    number: fromBlock + i,
    hash: labelHash(`block${fromBlock + i}`),
    parentHash: labelHash(`block${fromBlock + i - 1}`),
    timestamp: era + i * 2,
    txCount: 3,
  }))
  const malformed = [{ blockNumber: fromBlock, txHash: labelHash(`bad${chainId}-${fromBlock}`), userOpIndex: -1, reason: 'unknown schema' }]
  return {
    job: { chainId, fromBlock, toBlock, parentHash: labelHash(`block${fromBlock - 1}`), toHash: labelHash(`block${toBlock}`) },
    // the chain's finalized block is now's: the first era's day is history (history-days.ts)
    finalizedAt: NOW_S,
    blocks,
    txCount: rows.length + 3,
    rows,
    malformed: malformed as RangeResult['malformed'],
  }
}

/** The batches, in order: one chain alone first (the every-chain scope not kept), then a second chain, then both in one batch. */
const BATCHES: Range[][] = [
  [{ chainId: 8453, fromBlock: 1, toBlock: 10, era: ERAS[0]! }, { chainId: 8453, fromBlock: 11, toBlock: 20, era: ERAS[0]! }],
  [{ chainId: 8453, fromBlock: 21, toBlock: 30, era: ERAS[1]! }],
  [{ chainId: 10, fromBlock: 1, toBlock: 10, era: ERAS[1]! }, { chainId: 10, fromBlock: 11, toBlock: 20, era: ERAS[2]! }],
  [{ chainId: 8453, fromBlock: 31, toBlock: 40, era: ERAS[2]! }, { chainId: 10, fromBlock: 21, toBlock: 30, era: ERAS[2]! }],
]

/**
 * The bulk database's history days (history-days.ts): their code senders
 * have no member rows there, and their counts wait for the day to be
 * complete (`pending`). Keys `chain:day`; a day of every chain under `0:day`.
 */
type HistoryDays = { days: Set<string>; pending: Set<string> }

async function historyDaysIn({ db }: TestDatabase): Promise<HistoryDays> {
  const rows = await db.$client<{ chain_id: number; day: string; rolled_up: boolean }[]>`
    select chain_id, day::text as day, rolled_up from history_days where history`
  const days = new Set(rows.map((row) => row.day))
  const pending = new Set(rows.filter((row) => !row.rolled_up).flatMap((row) => [`${row.chain_id}:${row.day}`, `0:${row.day}`]))
  return { days, pending }
}

/** Whether `table`'s row is one the bulk path leaves to a history day's count (left out of both sides' comparison). */
function countedFromRows(table: string, row: Record<string, unknown>, history: HistoryDays): boolean {
  if (table === 'code_day_sender_refs') return history.days.has(row.day as string)
  if (table === 'code_daily_sender_counts') return history.pending.has(`${row.chain_id}:${row.day}`)
  return false
}

/**
 * Every table the commit writes, as sorted JSON rows (ids and wall-clock
 * times left out; events in id order). `chainSendersFrom`: a chain's
 * senders of earlier days left out (the bulk path writes none of days no
 * sender window reads, chainSendersReadFrom); `history`: the code senders
 * of history days the bulk path counts from rows (history-days.ts).
 */
async function tablesOf(
  { db }: TestDatabase,
  { chainSendersFrom = '0001-01-01', history = { days: new Set(), pending: new Set() } as HistoryDays } = {},
): Promise<Record<string, string[]>> {
  const tables = [
    'ranges', 'blocks', 'attributions', 'attribution_suffixes', 'malformed_suffixes',
    'code_daily_totals', 'code_hourly_totals', 'chain_daily_totals', 'chain_hourly_totals',
    'code_day_sender_refs', 'code_daily_sender_counts', 'chain_daily_senders',
    'code_window_totals', 'window_sender_refs', 'sender_window_counts', 'window_code_sender_refs', 'code_sender_window_counts',
    'every_chain_scope',
  ]
  const dump: Record<string, string[]> = {}
  for (const table of tables) {
    const rows = await db.$client<{ row: Record<string, unknown> }[]>`
      select to_jsonb(t) - 'id' - 'done_at' - 'created_at' as row from ${db.$client(table)} t`
    const kept = rows.filter(({ row }) => !(table === 'chain_daily_senders' && (row.day as string) < chainSendersFrom) && !countedFromRows(table, row, history))
    dump[table] = kept.map(({ row }) => JSON.stringify(presenceOf(table, row))).sort()
  }
  const events = await db.$client<{ row: string }[]>`select (to_jsonb(e) - 'id' - 'created_at')::text as row from attribution_events e order by id`
  dump.attribution_events = events.map(({ row }) => row)
  return dump
}

/**
 * A distinct-sender row as reads see it: which scopes hold the member
 * (above 0), not by how much — final rows hold FINAL_REFS there instead of
 * a count (final-refs.ts).
 */
function presenceOf(table: string, row: Record<string, unknown>): Record<string, unknown> {
  if (table === 'chain_daily_senders') return { ...row, attributions: Number(row.attributions) > 0 }
  if (!table.endsWith('_refs')) return row
  const refs = row.refs as Record<string, number>
  return { ...row, refs: Object.keys(refs).filter((scope) => refs[scope]! > 0).sort() }
}

/**
 * The bulk database's tables as the tip's, but for the chain senders of
 * days no sender window reads (none in bulk) and the code sender members
 * of history days (none in bulk; their counts compared once rolled up);
 * and a code's distinct senders over all days, as the API reads them, the same.
 */
async function expectSameTables(bulk: TestDatabase, tip: TestDatabase) {
  const chainSendersFrom = await chainSendersFirstDay(bulk.db)
  const history = await historyDaysIn(bulk)
  expect(await tablesOf(bulk, { chainSendersFrom, history })).toEqual(await tablesOf(tip, { chainSendersFrom, history }))
  expect(await sendersOverAllDays(bulk)).toEqual(await sendersOverAllDays(tip))
}

/** Every code's distinct senders from its first day to today, per scope the API reads (codeSenderCounts' `overall`). */
async function sendersOverAllDays({ db }: TestDatabase): Promise<Record<string, number>> {
  const windows = createRollingWindows(db.$client)
  const counts: Record<string, number> = {}
  for (const code of CODES)
    for (const chainId of [undefined, 8453, 10])
      for (const registry of [undefined, 'canonical', `${CUSTOM.chainId}:${CUSTOM.address.toLowerCase()}`]) {
        const query = { code, chainId, registry, from: '2000-01-01', to: '2100-01-01', rolling30d: false, now: new Date() }
        counts[`${code}|${chainId}|${registry}`] = (await codeSenderCounts(windows, query)).overall
      }
  return counts
}

/** Days holding a chain's senders in `database`. */
async function chainSenderDays({ db }: TestDatabase): Promise<string[]> {
  const days = await db.$client<{ day: string }[]>`select distinct day::text as day from chain_daily_senders order by 1`
  return days.map(({ day }) => day)
}

async function insertPending(database: TestDatabase, results: readonly RangeResult[]) {
  for (const { job } of results)
    await database.db.$client`
      insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash)
      values (${job.chainId}, ${job.fromBlock}, ${job.toBlock}, ${job.parentHash}, ${job.toHash})`
}

describe('bulk commit of finalized ranges', () => {
  it('leaves every table as the tip path leaves it, batch after batch', async () => {
    const tipMemory = createEveryChainMemory()
    const bulkMemory = createEveryChainMemory()
    // remembered across batches as a store remembers them: the last batch meets members of earlier ones again
    const finalMembers = createFinalMembers()
    for (const batch of BATCHES) {
      const results = batch.map(rangeResult)
      await Promise.all([insertPending(tip, results), insertPending(bulk, results)])
      const tipOutcomes = await commitRanges(tip.db, results, tipMemory)
      const bulkOutcomes = await commitFinalRanges(bulk.db, results, bulkMemory, finalMembers)
      expect(bulkOutcomes).toEqual(tipOutcomes)
      expect(bulkOutcomes.every((outcome) => outcome.committed && outcome.inserted > 0)).toBe(true)
      await expectSameTables(bulk, tip)
    }
    const [scope] = await bulk.db.$client<{ kept: boolean }[]>`select kept from every_chain_scope`
    expect(scope?.kept).toBe(true)
    // the first era's day is history, complete once the second era's blocks came: counted from its rows
    const history = await historyDaysIn(bulk)
    expect(history.days).toContain(new Date(ERAS[0]! * 1000).toISOString().slice(0, 10))
    expect(history.pending.size).toBe(0)
    // the first era (40 days ago) is before every sender window but the all-time one: the tip path counted its
    // chain senders, the bulk path wrote none (nothing reads them); every other day's are the same
    const chainSendersFrom = await chainSendersFirstDay(bulk.db)
    const eraDay = new Date(ERAS[0]! * 1000).toISOString().slice(0, 10)
    expect(eraDay < chainSendersFrom).toBe(true)
    expect(await chainSenderDays(tip)).toContain(eraDay)
    expect((await chainSenderDays(bulk)).every((day) => day >= chainSendersFrom)).toBe(true)
  })

  it('writes nothing for a batch with a range no longer pending, and nothing twice on a repeat', async () => {
    const before = await tablesOf(bulk)
    const done = rangeResult(BATCHES[0]![0]!)
    const fresh = rangeResult({ chainId: 8453, fromBlock: 41, toBlock: 50, era: ERAS[2]! })
    await insertPending(bulk, [fresh])
    expect(await commitFinalRanges(bulk.db, [fresh, done])).toEqual([
      { committed: false, inserted: 0 },
      { committed: false, inserted: 0 },
    ])
    const after = await tablesOf(bulk)
    expect(after.ranges).toHaveLength(before.ranges!.length + 1)
    expect(after.ranges).toEqual(expect.arrayContaining(before.ranges!))
    for (const table of Object.keys(before).filter((name) => name !== 'ranges')) expect(after[table], table).toEqual(before[table])
    // the range left pending is the bulk database's alone: the next test compares both again
    await bulk.db.$client`delete from ranges where chain_id = 8453 and from_block = 41`
  })

  it('tip rows above final ones, committed before or after them and rolled back, leave what the tip path leaves', async () => {
    // the same codes, senders and day as the final ranges below them: the tip's references and the final rows'
    // presence meet in the same rows
    const tipRange = rangeResult({ chainId: 8453, fromBlock: 61, toBlock: 70, era: ERAS[2]! })
    const finalRange = rangeResult({ chainId: 8453, fromBlock: 51, toBlock: 60, era: ERAS[2]! })
    await insertPending(tip, [tipRange, finalRange])
    await insertPending(bulk, [tipRange, finalRange])
    // committed out of order, as a backfill's ranges may be: the tip range first
    await commitRanges(tip.db, [tipRange])
    await commitRanges(bulk.db, [tipRange])
    await commitRanges(tip.db, [finalRange])
    await commitFinalRanges(bulk.db, [finalRange])
    await expectSameTables(bulk, tip)
    // a reorg of the tip: its rows go, the final rows' senders stay counted
    for (const database of [tip, bulk]) {
      const reserved = await database.db.$client.reserve()
      try {
        expect((await rollbackAbove(reserved, 8453, 60)).attributions).toBe(tipRange.rows.length)
      } finally {
        reserved.release()
      }
    }
    await expectSameTables(bulk, tip)
  })

  it('moves its windows past one day of those it wrote, the senders of the days still in them kept', async () => {
    // 4 days on, the 7-day windows leave the day 3 days ago and keep the last hour's day; 28 days on, the 30-day
    // windows (a chain's senders, a code's senders) do: a sender on both days stays counted
    for (const days of [4, 28]) {
      const later = new Date((NOW_S + days * DAY_S) * 1000)
      for (const database of [tip, bulk]) await createRollingWindows(database.db.$client).ensureCurrent(later)
      await expectSameTables(bulk, tip)
      const [counted] = await bulk.db.$client<{ windows: number }[]>`
        select count(distinct window_name)::int as windows from sender_window_counts where window_name <> 'senders:all' and senders > 0`
      expect(counted!.windows, `${days} days on`).toBe(days === 4 ? 2 : 1)
    }
  })

  it('moves its windows past the days it wrote as the tip path moves them', async () => {
    // 35 days on, every bounded sender window leaves the days it held, taken out by the chain senders kept of them
    const later = new Date((NOW_S + 35 * DAY_S) * 1000)
    for (const database of [tip, bulk]) await createRollingWindows(database.db.$client).ensureCurrent(later)
    await expectSameTables(bulk, tip)
    const [left] = await bulk.db.$client<{ counted: number }[]>`
      select count(*)::int as counted from sender_window_counts where window_name <> 'senders:all' and senders <> 0`
    expect(left!.counted).toBe(0)
  })
})

describe('history days', () => {
  let tipDb: TestDatabase
  let bulkDb: TestDatabase

  beforeAll(async () => {
    ;[tipDb, bulkDb] = await Promise.all([createTestDatabase('bulk_history_tip'), createTestDatabase('bulk_history_bulk')])
    for (const database of [tipDb, bulkDb]) await createRollingWindows(database.db.$client).ensureCurrent(new Date())
  })

  afterAll(async () => {
    await Promise.all([tipDb?.drop(), bulkDb?.drop()])
  })

  /** An hour into the day 40 days ago: ranges of it stay in it. */
  const DAY_X = Math.floor((NOW_S - 40 * DAY_S) / DAY_S) * DAY_S + 3600
  const dayX = new Date(DAY_X * 1000).toISOString().slice(0, 10)
  const inDayX = (chainId: number, fromBlock: number) => rangeResult({ chainId, fromBlock, toBlock: fromBlock + 9, era: DAY_X + fromBlock * 2 })
  const later = (chainId: number, fromBlock: number) => rangeResult({ chainId, fromBlock, toBlock: fromBlock + 9, era: ERAS[2]! })

  const commitBoth = async (results: RangeResult[], { tip = false, finalizedAt = NOW_S }: { tip?: boolean; finalizedAt?: number } = {}) => {
    await Promise.all([insertPending(tipDb, results), insertPending(bulkDb, results)])
    await commitRanges(tipDb.db, results)
    if (tip) await commitRanges(bulkDb.db, results)
    else await commitFinalRanges(bulkDb.db, results.map((result) => ({ ...result, finalizedAt })))
  }

  const historyOf = async (chainId: number) =>
    (await bulkDb.db.$client<{ history: boolean; rolled_up: boolean }[]>`
      select history, rolled_up from history_days where chain_id = ${chainId} and day = ${dayX}`)[0]

  it('counts a day before the finalized block’s day from its rows once complete, whatever tip rows and members it also holds', async () => {
    // the chain's finalized block in that same day: not history, its senders kept by members
    await commitBoth([inDayX(10, 1)], { finalizedAt: DAY_X + 600 })
    expect(await historyOf(10)).toEqual({ history: false, rolled_up: false })
    await expectSameTables(bulkDb, tipDb)
    // the finalized block days later: history, no members, the day's counts wait for it to be complete
    await commitBoth([inDayX(8453, 1)])
    expect(await historyOf(8453)).toEqual({ history: true, rolled_up: false })
    await expectSameTables(bulkDb, tipDb)
    // tip rows of that day, committed after it was marked (a process whose finalized block lags): recounted
    await commitBoth([inDayX(8453, 11)], { tip: true })
    await expect(exactCountsOf(bulkDb)).resolves.toEqual(await exactCountsOf(tipDb))
    await commitBoth([inDayX(8453, 21), inDayX(10, 11)])
    expect(await historyOf(10)).toEqual({ history: true, rolled_up: false })
    await expectSameTables(bulkDb, tipDb)
    // blocks of a later day complete it on each chain: counted on the chain and on every chain
    await commitBoth([later(8453, 31)])
    await commitBoth([later(10, 21)])
    expect([await historyOf(8453), await historyOf(10)]).toEqual([
      { history: true, rolled_up: true },
      { history: true, rolled_up: true },
    ])
    const [everyChain] = await bulkDb.db.$client<{ n: number }[]>`select count(*)::int as n from code_daily_sender_counts where chain_id = 0 and day = ${dayX}`
    expect(everyChain!.n).toBeGreaterThan(0)
    await expect(exactCountsOf(bulkDb)).resolves.toEqual(await exactCountsOf(tipDb))
    await expectSameTables(bulkDb, tipDb)
  })

  it('counts a history day again when a rollback takes tip rows of it out', async () => {
    // a third chain: its history rows, then tip rows of the same day above them, then a reorg of those
    await commitBoth([inDayX(7, 1)])
    await commitBoth([inDayX(7, 11)], { tip: true })
    await expect(exactCountsOf(bulkDb)).resolves.toEqual(await exactCountsOf(tipDb))
    for (const database of [tipDb, bulkDb]) {
      const reserved = await database.db.$client.reserve()
      try {
        await rollbackAbove(reserved, 7, 10)
      } finally {
        reserved.release()
      }
    }
    await expect(exactCountsOf(bulkDb)).resolves.toEqual(await exactCountsOf(tipDb))
    await expectSameTables(bulkDb, tipDb)
  })
})

/** Every code's distinct senders per day and scope, as stored. */
async function exactCountsOf({ db }: TestDatabase): Promise<string[]> {
  const rows = await db.$client<{ row: string }[]>`select to_jsonb(c)::text as row from code_daily_sender_counts c`
  return rows.map(({ row }) => row).sort()
}

describe('a bulk commit before the sender windows are built', () => {
  let tipDb: TestDatabase
  let bulkDb: TestDatabase

  beforeAll(async () => {
    // no window ready yet, as a fresh database before the API first moved them
    ;[tipDb, bulkDb] = await Promise.all([createTestDatabase('bulk_unbuilt_tip'), createTestDatabase('bulk_unbuilt_bulk')])
  })

  afterAll(async () => {
    await Promise.all([tipDb?.drop(), bulkDb?.drop()])
  })

  it('keeps every day’s chain senders, and the windows built from them later count each sender once', async () => {
    const results = [rangeResult({ chainId: 8453, fromBlock: 1, toBlock: 10, era: ERAS[0]! }), rangeResult({ chainId: 8453, fromBlock: 11, toBlock: 20, era: ERAS[2]! })]
    await Promise.all([insertPending(tipDb, results), insertPending(bulkDb, results)])
    await commitRanges(tipDb.db, results)
    await commitFinalRanges(bulkDb.db, results)
    // a window still to be built reads every day's chain senders: the bulk path wrote them all
    const history = await historyDaysIn(bulkDb)
    expect(history.pending.size).toBe(0)
    expect(await tablesOf(bulkDb, { history })).toEqual(await tablesOf(tipDb, { history }))
    expect(await chainSenderDays(bulkDb)).toContain(new Date(ERAS[0]! * 1000).toISOString().slice(0, 10))
    for (const database of [tipDb, bulkDb]) await createRollingWindows(database.db.$client).ensureCurrent(new Date())
    await expectSameTables(bulkDb, tipDb)
    const [all] = await bulkDb.db.$client<{ counted: number; senders: number }[]>`
      select (select senders::int from sender_window_counts where window_name = 'senders:all' and scope = 8453) as counted,
        (select count(distinct sender)::int from attributions) as senders`
    expect(all!.counted).toBe(all!.senders)
  })
})

describe('a bulk commit larger than a piece of its preparation', () => {
  let tipDb: TestDatabase
  let bulkDb: TestDatabase

  beforeAll(async () => {
    ;[tipDb, bulkDb] = await Promise.all([createTestDatabase('bulk_pieces_tip'), createTestDatabase('bulk_pieces_bulk')])
  })

  afterAll(async () => {
    await Promise.all([tipDb?.drop(), bulkDb?.drop()])
  })

  it('stores a record whose rows two pieces share once, and folds it once', async () => {
    // one row, then records of two codes: the 2,000th row (the first piece's last, bulk-commit.ts) is the first of a
    // record whose second row opens the next piece
    const rows: RangeResult['rows'] = []
    for (let i = 0; i < 1_300; i++) {
      const first = attributionRow({ tx: `p${i}`, code: CODES[i % 4]!, sender: senderAddress(1 + (i % 40)), timestamp: ERAS[0]! + i, block: 1 + Math.floor(i / 130) })
      rows.push(first)
      if (i > 0) rows.push({ ...first, code: CODES[(i % 4) + 1]! })
    }
    const results: RangeResult[] = [
      {
        job: { chainId: 8453, fromBlock: 1, toBlock: 10, parentHash: labelHash('block0'), toHash: labelHash('block10') },
        finalizedAt: NOW_S,
        blocks: Array.from({ length: 10 }, (_, i) => ({
          number: 1 + i,
          hash: labelHash(`block${1 + i}`),
          parentHash: labelHash(`block${i}`),
          timestamp: ERAS[0]! + i * 130,
          txCount: 130,
        })),
        txCount: 1_300,
        rows,
        malformed: [],
      },
    ]
    await Promise.all([insertPending(tipDb, results), insertPending(bulkDb, results)])
    await commitRanges(tipDb.db, results)
    expect(await commitFinalRanges(bulkDb.db, results)).toEqual([{ committed: true, inserted: 2_599 }])
    await expectSameTables(bulkDb, tipDb)
  })

  it('fails a commit whose COPY fails, and writes nothing of it (the driver is not left waiting)', async () => {
    const row = attributionRow({ tx: 'twice', code: 'alpha', sender: senderAddress(1), timestamp: ERAS[0]!, block: 11 })
    const results: RangeResult[] = [
      {
        job: { chainId: 8453, fromBlock: 11, toBlock: 20, parentHash: labelHash('block10'), toHash: labelHash('block20') },
        blocks: [],
        txCount: 2,
        // the same row twice: the unique key refuses the second in the middle of the COPY
        rows: [row, { ...row, record: { ...row.record } }],
        malformed: [],
      },
    ]
    await insertPending(bulkDb, results)
    // the every-chain scope's state may be claimed for the chain before the transaction (every-chain.ts): not compared
    const rowTables = async () => {
      const { every_chain_scope: _, ...tables } = await tablesOf(bulkDb)
      return tables
    }
    const before = await rowTables()
    await expect(commitFinalRanges(bulkDb.db, results)).rejects.toThrow(/duplicate key/)
    expect(await rowTables()).toEqual(before)
  })
})

describe('bulk commit while a rolling window moves', () => {
  let tipDb: TestDatabase
  let bulkDb: TestDatabase
  const THREE_DAYS_AGO = new Date((NOW_S - 3 * DAY_S) * 1000)

  beforeAll(async () => {
    ;[tipDb, bulkDb] = await Promise.all([createTestDatabase('bulk_move_tip'), createTestDatabase('bulk_move_bulk')])
    // windows left three days behind, as a process stopped since then left them
    for (const database of [tipDb, bulkDb]) await createRollingWindows(database.db.$client).ensureCurrent(THREE_DAYS_AGO)
  })

  afterAll(async () => {
    await Promise.all([tipDb?.drop(), bulkDb?.drop()])
  })

  /** Resolves once `count` backends of `database` wait on a lock. */
  async function waitingOnLocks({ db }: TestDatabase, count: number) {
    await expect
      .poll(async () => (await db.$client`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`).length, { timeout: 30_000 })
      .toBeGreaterThanOrEqual(count)
  }

  it('folds again with the windows as they stand inside the commit, not as read before it', async () => {
    // three days old: inside the 24-hour window as it stood three days ago, outside it once moved
    const results = [rangeResult({ chainId: 8453, fromBlock: 1, toBlock: 10, era: ERAS[1]! })]
    await Promise.all([insertPending(tipDb, results), insertPending(bulkDb, results)])
    await createRollingWindows(tipDb.db.$client).ensureCurrent(new Date())
    await commitRanges(tipDb.db, results)

    // a window move held half-way, its window_bounds row locked: the commit prepares with the old bounds, then waits for it
    const holder = await bulkDb.db.$client.reserve()
    try {
      await holder`begin`
      await holder`lock table code_window_totals in access exclusive mode`
      const moved = createRollingWindows(bulkDb.db.$client).ensureCurrent(new Date())
      await waitingOnLocks(bulkDb, 1)
      const committed = commitFinalRanges(bulkDb.db, results)
      // the commit's transaction waits for the move (its window_bounds row, or the every-chain state it reads)
      await waitingOnLocks(bulkDb, 2)
      await holder`commit`
      await Promise.all([moved, committed])
    } finally {
      holder.release()
    }
    await expectSameTables(bulkDb, tipDb)
  })
})

describe('members a process made final, when a window moves past them', () => {
  let tipDb: TestDatabase
  let bulkDb: TestDatabase

  beforeAll(async () => {
    ;[tipDb, bulkDb] = await Promise.all([createTestDatabase('bulk_known_tip'), createTestDatabase('bulk_known_bulk')])
    for (const database of [tipDb, bulkDb]) await createRollingWindows(database.db.$client).ensureCurrent(new Date((NOW_S - 3 * DAY_S) * 1000))
  })

  afterAll(async () => {
    await Promise.all([tipDb?.drop(), bulkDb?.drop()])
  })

  it('asks again for a member remembered under the bounds it left, and counts it in the window it entered', async () => {
    const finalMembers = createFinalMembers()
    const commitBoth = async (results: RangeResult[]) => {
      await Promise.all([insertPending(tipDb, results), insertPending(bulkDb, results)])
      await commitRanges(tipDb.db, results)
      await commitFinalRanges(bulkDb.db, results, undefined, finalMembers)
    }
    // three days old: in the 24-hour windows as they stood three days ago; the same senders again in the last hour
    await commitBoth([rangeResult({ chainId: 8453, fromBlock: 1, toBlock: 10, era: ERAS[1]! })])
    for (const database of [tipDb, bulkDb]) await createRollingWindows(database.db.$client).ensureCurrent(new Date())
    await commitBoth([rangeResult({ chainId: 8453, fromBlock: 11, toBlock: 20, era: ERAS[2]! })])
    await expectSameTables(bulkDb, tipDb)
    const [counted] = await bulkDb.db.$client<{ senders: number }[]>`
      select senders::int from sender_window_counts where window_name = 'senders:24h' and scope = 8453`
    expect(counted?.senders).toBeGreaterThan(0)
  })
})
