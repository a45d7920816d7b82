import postgres from 'postgres'
import type { Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { MAX_LEADERBOARD_LIMIT } from '../../src/analytics/leaderboard.js'
import type { Attributed } from '../../src/attribution/decode.js'
import { closeDatabase, createDatabase, type Database } from '../../src/db/client.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { addDays, dayOf } from '../../src/store/buckets.js'
import { commitRange } from '../../src/store/commit.js'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { databaseUrlNamed, uniqueName } from '../support/services.js'
import { insertAttributionRows, migrateThroughBackfills, runBackfills, UPGRADE_CHAINS } from '../support/upgrade.js'
import { until } from '../support/poll.js'

/**
 * An upgrade of a database that indexed before the aggregate tables: rows
 * already stored, the migrations' hand-written backfills build every
 * aggregate from them, the later migrations convert what the backfills
 * built. Afterwards the API must answer exactly what the rows say — every
 * figure below is counted straight from `attributions` — and the next
 * commit must add to the converted aggregates exactly.
 */
const ROWS = 3_000
const name = uniqueName('upgrade')
const url = databaseUrlNamed(inject('databaseUrl'), name)
let sql: postgres.Sql
let db: Database
let api: TestApi
/** Wallets stored in two spellings before the upgrade. */
let spelledApart = 0

const admin = () => postgres(databaseUrlNamed(inject('databaseUrl'), 'postgres'), { max: 1, onnotice: () => {} })

const get = async (path: string) => {
  const response = await request(`${api.url}${path}`)
  expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(200)
  return response.body
}

/** The summary's totals, counted from the rows (every generated row is its own transaction or operation). */
async function summaryFromRows(chainId?: number) {
  const [row] = await sql<Array<Record<string, number>>>`
    select count(*)::int as attributions,
      (count(*) filter (where kind = 'transaction' and status = 'success'))::int as transactions,
      (count(*) filter (where kind = 'userOperation' and status = 'success'))::int as "userOperations",
      (count(*) filter (where status = 'success'))::int as total,
      (count(*) filter (where status = 'reverted'))::int as reverted,
      count(distinct (code, case when code_status = 'custom' then registry_chain_id || ':' || lower(registry_address) else 'canonical' end))::int as "activeCodes",
      count(distinct sender)::int as "uniqueSenders"
    from attributions where ${chainId === undefined ? sql`true` : sql`chain_id = ${chainId}`}`
  return row
}

beforeAll(async () => {
  const creator = admin()
  await creator.unsafe(`create database "${name}"`)
  await creator.end({ timeout: 5 })
  await migrateThroughBackfills(url)
  sql = postgres(url, { max: 2, onnotice: () => {} })
  // few enough codes that the leaderboard lists them all on one page
  // a wallet's UserOperations spelled apart from its transactions, as before migration 0019
  await insertAttributionRows(sql, { rows: ROWS, codes: 60, senders: 400, opSendersSpelledApart: true })
  spelledApart = (await sql<{ n: number }[]>`select count(distinct sender)::int - count(distinct lower(sender))::int as n from attributions`)[0]!.n
  await runBackfills(sql)
  await migrateDatabase(url)
  // rows the commit statement never saw: the API builds the rolling windows from them when it starts
  await sql`update window_bounds set ready = false`
  db = createDatabase({ url, poolSize: 3 })
  api = await startTestApi({ db, databaseUrl: url, redisUrl: inject('redisUrl') })
  // a read moves the windows to now, building them first; the positive signal is every window marked ready
  await until('the API to build the rolling windows', async () => {
    await get('/v1/analytics/summary?window=all')
    return (await sql<{ ready: boolean }[]>`select bool_and(ready) as ready from window_bounds`)[0]!.ready
  }, { intervalMs: 100 })
}, 120_000)

afterAll(async () => {
  await api?.close()
  if (db) await closeDatabase(db)
  await sql?.end({ timeout: 5 })
  const dropper = admin()
  await dropper.unsafe(`drop database if exists "${name}" with (force)`)
  await dropper.end({ timeout: 5 })
})

describe('after the upgrade', () => {
  it('holds each transaction’s suffix once, moved off its rows (migration 0016)', async () => {
    const [counts] = await sql<{ suffixes: number; units: number; matched: number }[]>`
      select (select count(*) from attribution_suffixes)::int as suffixes,
        (select count(*) from (select distinct chain_id, tx_hash, user_op_index from attributions) u)::int as units,
        (select count(*) from attribution_suffixes s join (select distinct chain_id, tx_hash, user_op_index from attributions) u
          using (chain_id, tx_hash, user_op_index) where s.suffix like '0x%' and s.suffix_bytes > 0)::int as matched`
    expect(counts).toEqual({ suffixes: ROWS, units: ROWS, matched: ROWS })
  })

  it('stores every sender lowercase, a wallet in two spellings counted once (migration 0019)', async () => {
    expect(spelledApart).toBeGreaterThan(100)
    const [stored] = await sql<{ apart: number }[]>`select count(*)::int as apart from attributions where sender <> lower(sender)`
    expect(stored!.apart).toBe(0)
    // the sums below count distinct lowercase senders: without the merge the API would count these wallets twice
  })

  it('summarises every chain and each chain as the rows say', async () => {
    expect((await get('/v1/analytics/summary?window=all')).totals).toEqual(await summaryFromRows())
    for (const chainId of Object.values(UPGRADE_CHAINS)) {
      expect((await get(`/v1/analytics/summary?window=all&chainId=${chainId}`)).totals, `chain ${chainId}`).toEqual(await summaryFromRows(chainId))
    }
  })

  it("totals each code's transactions, operations, reverts, gas and senders as the rows say", async () => {
    const codes = await sql<Array<{ code: string; transactions: number; userOperations: number; total: number; reverted: number; suffixGas: number; senders: number }>>`
      select code,
        (count(*) filter (where kind = 'transaction' and status = 'success'))::int as transactions,
        (count(*) filter (where kind = 'userOperation' and status = 'success'))::int as "userOperations",
        (count(*) filter (where status = 'success'))::int as total,
        (count(*) filter (where status = 'reverted'))::int as reverted,
        sum(suffix_gas)::int as "suffixGas",
        count(distinct sender)::int as senders
      from attributions where code_status <> 'invalid' group by code order by count(*) desc, code limit 5`
    const today = dayOf(new Date())
    for (const { code, senders, ...totals } of codes) {
      const body = await get(`/v1/analytics/codes/${code}?from=${addDays(today, -31)}&to=${today}`)
      expect({ totals: body.totals, uniqueSenders: body.uniqueSenders }, code).toEqual({ totals, uniqueSenders: senders })
    }
  })

  it("ranks the codes by their successful rows, invalid ones included when asked", async () => {
    const expected = await sql<Array<{ code: string; total: number }>>`
      select code, count(*)::int as total from attributions where status = 'success' group by code`
    const board = await get(`/v1/analytics/leaderboard?window=all&include=invalid&limit=${MAX_LEADERBOARD_LIMIT}`)
    expect(board.entries.length).toBeLessThan(MAX_LEADERBOARD_LIMIT)
    const listed: Record<string, number> = {}
    // one entry per code and registry namespace: a code's total is their sum
    for (const entry of board.entries as Array<{ code: string; total: number }>) listed[entry.code] = (listed[entry.code] ?? 0) + entry.total
    expect(listed).toEqual(Object.fromEntries(expected.map((row) => [row.code, row.total])))
    const totals = (board.entries as Array<{ total: number }>).map((entry) => entry.total)
    expect(totals).toEqual([...totals].sort((a, b) => b - a))
  })

  it('adds the next commit to the converted aggregates exactly', async () => {
    const before = await get(`/v1/analytics/summary?window=all&chainId=${UPGRADE_CHAINS.base}`)
    const block = 10_000_000
    const job = { chainId: UPGRADE_CHAINS.base, fromBlock: block, toBlock: block, parentHash: `0x${'01'.repeat(32)}` as Hex, toHash: `0x${'02'.repeat(32)}` as Hex }
    await sql`insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash) values (${job.chainId}, ${block}, ${block}, ${job.parentHash}, ${job.toHash})`
    const attribution = {
      kind: 'attributed', schemaId: 0, codes: ['bc_upgraded'], entries: [{ code: 'bc_upgraded', role: 'service', valid: true }],
      suffix: '0x00', suffixBytes: 1, suffixGas: 4,
    } as unknown as Attributed
    const committed = await commitRange(db, {
      job,
      blocks: [{ number: block, hash: job.toHash, parentHash: job.parentHash, timestamp: Math.floor(Date.now() / 1000), txCount: 1 }],
      txCount: 1,
      rows: [{
        code: 'bc_upgraded',
        record: {
          kind: 'transaction', txHash: `0x${'cd'.repeat(32)}`, txIndex: 0, blockNumber: block, blockHash: job.toHash,
          blockTimestamp: Math.floor(Date.now() / 1000), userOpIndex: -1, userOpHash: undefined, sender: '0x00000000000000000000000000000000000000f1',
          target: null, status: 'success', actualGasCost: undefined, attribution,
        },
        resolution: { status: 'unregistered', wallet: null, registry: null },
      }],
      malformed: [],
    })
    expect(committed).toEqual({ committed: true, inserted: 1 })
    const after = await get(`/v1/analytics/summary?window=all&chainId=${UPGRADE_CHAINS.base}`)
    expect(after.totals).toEqual({
      ...before.totals,
      attributions: before.totals.attributions + 1,
      transactions: before.totals.transactions + 1,
      total: before.totals.total + 1,
      activeCodes: before.totals.activeCodes + 1,
      uniqueSenders: before.totals.uniqueSenders + 1,
    })
    expect(after.totals).toEqual(await summaryFromRows(UPGRADE_CHAINS.base))
    const today = dayOf(new Date())
    expect((await get(`/v1/analytics/codes/bc_upgraded?from=${addDays(today, -1)}&to=${today}`)).totals).toEqual({
      transactions: 1, userOperations: 0, total: 1, reverted: 0, suffixGas: 4,
    })
  })
})
