import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { totalsByCode, type GroundTruth } from '../../devnet/ledger.js'
import { stuckRangeCounts, stuckRanges } from '../../src/store/ranges.js'
import { startTestApi } from '../support/api.js'
import { startTestChain, sendMixedTraffic, type TestChain } from '../support/chain.js'
import { indexerEnv, malformedFromIndex, malformedFromTruth, rowsFromIndex, rowsFromTruth, startTestIndexer, totalsFromIndex, waitForIndexed } from '../support/indexer.js'
import { startRpcProxy, type RpcLimits, type RpcProxy } from '../support/rpc-proxy.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { until } from '../support/poll.js'

/**
 * The indexer on its default RPC settings (batches of up to 50 calls, ranges
 * of 25 blocks) against a node that applies one limit real nodes apply: it
 * must learn the limit and index exactly what the chain holds, each time.
 */
let chain: TestChain
let truth: GroundTruth
let head: number

beforeAll(async () => {
  chain = await startTestChain()
  truth = await sendMixedTraffic(chain, { transactions: 200, blocks: 50 })
  head = Number(await chain.client.getBlockNumber())
}, 120_000)

afterAll(async () => {
  await chain?.stop()
})

type Run = { proxy: RpcProxy; database: TestDatabase; redis: TestRedis }

/** Indexes the whole chain through a proxy with `limits` (changed by `during` meanwhile), then checks it exactly. */
async function indexThrough(limits: RpcLimits, extra: Record<string, string> = {}, during?: (run: Run) => Promise<void>): Promise<Run> {
  const [database, redis] = await Promise.all([createTestDatabase('rpclimits'), createTestRedis()])
  const proxy = await startRpcProxy({ target: chain.rpcUrl, limits })
  const run = { proxy, database, redis }
  try {
    const indexer = await startTestIndexer({
      db: database.db,
      env: indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix, extra: { RANGE_SIZE: '25', ...extra } }),
      chains: [{ ...chain.config, rpcUrl: proxy.url }],
    })
    try {
      await during?.(run)
      await waitForIndexed(database.db, chain.chainId, head, 90_000)
    } finally {
      await indexer.stop()
    }
    expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(totalsByCode(truth))
    expect(await rowsFromIndex(database.db, chain.chainId)).toEqual(rowsFromTruth(truth))
    expect(await malformedFromIndex(database.db, chain.chainId)).toEqual(malformedFromTruth(truth))
    const [blocks] = await database.db.$client<{ n: number }[]>`select count(distinct number)::int as n from blocks where chain_id = ${chain.chainId}`
    expect(blocks!.n).toBe(head + 1)
    return run
  } finally {
    await proxy.close()
    await database.drop()
    await redis.cleanup()
  }
}

/** After the limit was learned the client keeps to it: the last requests are all within `max` calls. */
function settledWithin(proxy: RpcProxy, max: number) {
  expect(Math.max(...proxy.batchLengths.slice(-5))).toBeLessThanOrEqual(max)
}

describe('batch item limits', () => {
  for (const shape of ['erigon', 'besu', 'http413', 'http400'] as const) {
    it(`learns a cap of 10 calls answered the ${shape} way and indexes exactly`, async () => {
      const { proxy } = await indexThrough({ batchLimit: { max: 10, shape } })
      expect(proxy.limitCounts.batch_refused).toBeGreaterThan(0)
      // learned once per batch in flight at the time, not refused range after range
      expect(proxy.limitCounts.batch_refused).toBeLessThan(20)
      settledWithin(proxy, 10)
    }, 120_000)
  }

  it('follows a limit that tightens mid-run (20, then 5 calls) and indexes exactly', async () => {
    const { proxy } = await indexThrough({ batchLimit: { max: 20, shape: 'erigon' } }, { RANGE_SIZE: '10', WORKER_CONCURRENCY: '1' }, async ({ proxy }) => {
      await until('four batches at the proxy', () => proxy.batchLengths.length >= 4, { intervalMs: 20 })
      proxy.setLimits({ batchLimit: { max: 5, shape: 'besu' } })
    })
    expect(proxy.limitCounts.batch_refused).toBeGreaterThan(0)
    settledWithin(proxy, 5)
  }, 120_000)

  it('sends single calls, pipelined, to a node that accepts no batches', async () => {
    const { proxy } = await indexThrough({ noBatches: true })
    expect(proxy.limitCounts.no_batches).toBeGreaterThan(0)
    expect(proxy.limitCounts.no_batches).toBeLessThan(20)
    settledWithin(proxy, 1)
  }, 120_000)
})

describe('batches that break without naming a limit', () => {
  // the node (or the proxy in front of it) fails every batch of more than 20 calls; a single call always works
  for (const shape of ['reset', 'html502', 'truncated', 'endless'] as const) {
    it(`splits batches broken the ${shape} way, learns a cap of at most 20 calls, and indexes exactly on defaults`, async () => {
      // an endless answer is cut off at RPC_MAX_ANSWER_BYTES (256 MiB): the whole test takes ~15 s that way, and it stays on defaults
      const { proxy } = await indexThrough({ batchBreaks: { over: 20, shape } })
      expect(proxy.limitCounts.batch_broken).toBeGreaterThan(0)
      // learned, not met range after range: far fewer broken batches than ranges (with batches of 50, every one would break)
      expect(proxy.limitCounts.batch_broken).toBeLessThan(proxy.batchLengths.length / 4)
      // kept to the cap once learned: the run ends on batches within it. (Not "the last ten": each method learns on its
      // own, and a range's receipts go in one request, so the receipts' learning — a batch of 63 broken, its halves
      // broken, then batches of 15 — can come late in a run this short; a re-probe above the cap waits for at least 16
      // clean batches at it, the wait doubling each time)
      settledWithin(proxy, 20)
    }, 120_000)
  }
})

it('re-asks only the calls past a response size limit (-32003), in smaller batches, and indexes exactly', async () => {
  const { proxy } = await indexThrough({ maxResponseBytes: 12_000 })
  expect(proxy.limitCounts.too_large).toBeGreaterThan(0)
  // the node refuses call by call: the calls of each batch in flight when the limit was learned, and blocks of
  // unequal size now and then — fewer refusals than the chain has blocks, so no call was asked again and again
  expect(proxy.limitCounts.too_large).toBeLessThan(head + 1)
}, 120_000)

it('shrinks batches on a node too slow for a 25-call batch within RPC_TIMEOUT_MS and indexes exactly', async () => {
  // 60 ms per call: 25 calls take 1.5 s against a 1 s timeout, 12 calls 0.7 s
  const { proxy } = await indexThrough({ msPerCall: 60 }, { RPC_TIMEOUT_MS: '1000' })
  expect(proxy.limitCounts.delayed).toBeGreaterThan(0)
  settledWithin(proxy, 16)
}, 120_000)

it('backs off on 429 with Retry-After and indexes exactly', async () => {
  const { proxy } = await indexThrough({ rateLimit: { requests: 4, windowMs: 500, retryAfterS: 1 } })
  expect(proxy.limitCounts.rate_limited).toBeGreaterThan(0)
}, 120_000)

it('backs off from a node that refuses past its rate with 429 and names no Retry-After, and indexes exactly', async () => {
  const { proxy } = await indexThrough({ rateLimit: { requests: 4, windowMs: 500 } })
  expect(proxy.limitCounts.rate_limited).toBeGreaterThan(0)
  // a refusal at the cap an earlier one set pauses every request, twice as long after each: 10 refusals here, where
  // holding back only the refused calls met 23 (each window's fifth request and every one sent after it)
  expect(proxy.limitCounts.rate_limited).toBeLessThan(16)
}, 120_000)

it('reports a range that keeps failing as stuck (gauge source, /readyz) while later ranges are indexed', async () => {
  const [database, redis] = await Promise.all([createTestDatabase('rpcstuck'), createTestRedis()])
  const badBlock = `0x${(20).toString(16)}`
  // block 20 in full is never served: a permanent fault of one range (blocks 20-24 with RANGE_SIZE 5)
  const proxy = await startRpcProxy({
    target: chain.rpcUrl,
    fault: (body) => {
      const calls = (Array.isArray(body) ? body : [body]) as Array<{ method: string; params: unknown[] }>
      return calls.some((call) => call.method === 'eth_getBlockByNumber' && call.params[0] === badBlock && call.params[1] === true) ? '500' : 'ok'
    },
  })
  const env = indexerEnv({
    databaseUrl: database.url,
    redisUrl: redis.url,
    prefix: redis.prefix,
    extra: { RANGE_SIZE: '5', STUCK_RANGE_ATTEMPTS: '2', RPC_MAX_ATTEMPTS: '2' },
  })
  const indexer = await startTestIndexer({ db: database.db, env, chains: [{ ...chain.config, rpcUrl: proxy.url }] })
  const api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: redis.url, env: { STUCK_RANGE_ATTEMPTS: '2' } })
  try {
    const deadline = Date.now() + 60_000
    while ((await stuckRanges(database.db.$client, 2)).length === 0) {
      if (Date.now() > deadline) throw new Error('the failing range was not reported stuck within 60 s')
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const ready = (await (await fetch(`${api.url}/readyz`)).json()) as { stuck_ranges: Array<Record<string, unknown>> }
    expect(ready.stuck_ranges).toHaveLength(1)
    expect(ready.stuck_ranges[0]).toMatchObject({ chain_id: chain.chainId, from_block: 20, to_block: 24 })
    expect(ready.stuck_ranges[0]!.attempts).toBeGreaterThanOrEqual(2)
    expect(String(ready.stuck_ranges[0]!.last_error)).toContain('HTTP 500')
    // what the indexer_stuck_ranges gauge reads
    expect(await stuckRangeCounts(database.db.$client, 2)).toEqual([{ chainId: chain.chainId, stuck: 1 }])
    // the follower keeps cutting and the workers keep indexing past the stuck range
    const later = Math.ceil((head + 1 - 25) / 5)
    for (const deadlineDone = Date.now() + 60_000; ; ) {
      const [row] = await database.db.$client<{ n: number }[]>`
        select count(*)::int as n from ranges where chain_id = ${chain.chainId} and status = 'done' and from_block >= 25`
      if (row!.n === later) break
      if (Date.now() > deadlineDone) throw new Error(`ranges after the stuck one not indexed: ${row!.n} done`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  } finally {
    await api.close()
    await indexer.stop()
    await proxy.close()
    await database.drop()
    await redis.cleanup()
  }
}, 150_000)
