import { Attribution } from 'ox/erc8021'
import { Registry as MetricsRegistry } from 'prom-client'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { calldataGas } from '../../src/attribution/gas.js'
import { startAnvil, type Anvil } from '../../devnet/anvil.js'
import { createDevnetClient } from '../../devnet/client.js'
import { anvilChain, indexThrough, totalsFromIndex, type CodeTotals } from '../support/indexer.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

/**
 * Blocks flooded with suffixes of 32 codes, as anyone can fill them on a
 * chain of cheap gas: at full scale a range of 50 such blocks is millions
 * of rows, more than a worker's memory or one commit statement holds, and
 * it failed on every retry. Here at a small scale (MAX_RANGE_ROWS 200,
 * ranges of 6 blocks): ranges past the budget are split into ranges within
 * it, a block past it alone is indexed whole, and the totals are exact.
 */

let anvil: Anvil
let database: TestDatabase
let redis: TestRedis

beforeAll(async () => {
  ;[anvil, database, redis] = await Promise.all([startAnvil(), createTestDatabase('dense_ranges'), createTestRedis()])
})

afterAll(async () => {
  await anvil?.stop()
  await database?.drop()
  await redis?.cleanup()
})

const MAX_RANGE_ROWS = 200
const RANGE_SIZE = 6
/** 32 codes, the most one suffix may name: 32 rows a transaction. */
const FLOOD = Attribution.toDataSuffix({ codes: Array.from({ length: 32 }, (_, i) => `c${i}`) })

/** Transactions of 32 codes in block `n`: 4 in most (128 rows), 10 in one (320 rows, past the budget alone), 0 in every third. */
const floodedIn = (n: number): number => (n === 7 ? 10 : n % 3 === 2 ? 0 : 4)

it('splits ranges whose blocks hold more rows than MAX_RANGE_ROWS: every block indexed once, totals exact', async () => {
  const client = createDevnetClient({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId })
  const [sender] = await client.getAddresses()
  await client.setAutomine(false)
  const expected: Record<string, CodeTotals> = {}
  const blocks = 18
  for (let n = 0; n < blocks; n++) {
    for (let t = 0; t < floodedIn(n); t++) {
      await client.sendTransaction({ account: sender!, to: sender!, data: `0xdeadbeef${FLOOD.slice(2)}`, chain: null })
      for (let i = 0; i < 32; i++) {
        const entry = (expected[`c${i}`] ??= { transactions: 0, userOperations: 0, reverted: 0, suffixGas: 0 })
        entry.transactions++
        entry.suffixGas += calldataGas(FLOOD)
      }
    }
    // one honest transaction in every block
    const honest = Attribution.toDataSuffix({ codes: ['honest_app'] })
    await client.sendTransaction({ account: sender!, to: sender!, data: `0xa9059cbb${honest.slice(2)}`, chain: null })
    const entry = (expected.honest_app ??= { transactions: 0, userOperations: 0, reverted: 0, suffixGas: 0 })
    entry.transactions++
    entry.suffixGas += calldataGas(honest)
    await client.mine({ blocks: 1 })
  }
  const head = Number(await client.getBlockNumber())

  const metricsRegistry = new MetricsRegistry()
  await indexThrough({
    metricsRegistry,
    database,
    redis,
    chains: [anvilChain(anvil.rpcUrl)],
    chainId: anvil.chainId,
    head,
    extra: { RANGE_SIZE: String(RANGE_SIZE), MAX_RANGE_ROWS: String(MAX_RANGE_ROWS) },
  })

  expect(await totalsFromIndex(database.db)).toEqual(expected)
  const sql = database.db.$client
  const ranges = await sql<{ from: number; to: number; status: string; rows: number }[]>`
    select from_block::int as from, to_block::int as to, status, attribution_count as rows from ranges
    where chain_id = ${anvil.chainId} order by from_block`
  // contiguous from genesis to the head, each block in one range, every range done
  expect(ranges[0]!.from).toBe(0)
  expect(ranges.at(-1)!.to).toBe(head)
  ranges.slice(1).forEach((range, i) => expect(range.from, `range after ${ranges[i]!.to}`).toBe(ranges[i]!.to + 1))
  expect(ranges.filter((range) => range.status !== 'done')).toEqual([])
  // the follower cut ranges of 6 blocks; the dense ones were split into ranges within the budget
  expect(ranges.length).toBeGreaterThan(Math.ceil((head + 1) / RANGE_SIZE))
  for (const range of ranges) {
    if (range.to > range.from) expect(range.rows, `range ${range.from}-${range.to}`).toBeLessThanOrEqual(MAX_RANGE_ROWS)
  }
  // the block past the budget alone is a range of its own, indexed whole: 10 × 32 + 1 rows
  expect(ranges.filter((range) => range.rows > MAX_RANGE_ROWS)).toEqual([{ from: 8, to: 8, status: 'done', rows: 321 }])
  // the block past the budget was indexed alone once (one at a time per worker); the ranges around it were split
  const dense = await metricsRegistry.getSingleMetric('indexer_dense_ranges_total')!.get()
  const byOutcome = Object.fromEntries(dense.values.map((value) => [value.labels.outcome, value.value]))
  expect(byOutcome.block_alone).toBe(1)
  expect(byOutcome.split).toBeGreaterThan(0)
  const [counted] = await sql<{ rows: number; transactions: number }[]>`
    select count(*)::int as rows, count(distinct tx_hash)::int as transactions from attributions where chain_id = ${anvil.chainId}`
  const flooded = Array.from({ length: blocks }, (_, n) => floodedIn(n)).reduce((sum, count) => sum + count, 0)
  expect(counted).toEqual({ rows: flooded * 32 + blocks, transactions: flooded + blocks })
})
