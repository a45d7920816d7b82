import { afterAll, beforeAll, expect, it } from 'vitest'
import { totalsByCode, type GroundTruth } from '../../devnet/ledger.js'
import { startTestChain, sendMixedTraffic, type TestChain } from '../support/chain.js'
import {
  indexerEnv,
  malformedFromIndex,
  malformedFromTruth,
  rowsFromIndex,
  rowsFromTruth,
  startTestIndexer,
  totalsFromIndex,
  waitForIndexed,
} from '../support/indexer.js'
import { rotatingFaults, startRpcProxy, type RpcProxy } from '../support/rpc-proxy.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

let chain: TestChain
let proxy: RpcProxy
let database: TestDatabase
let redis: TestRedis
let truth: GroundTruth

beforeAll(async () => {
  ;[chain, database, redis] = await Promise.all([startTestChain(), createTestDatabase('rpcfaults'), createTestRedis()])
  truth = await sendMixedTraffic(chain, { transactions: 200, blocks: 50 })
  proxy = await startRpcProxy({ target: chain.rpcUrl, hangMs: 1_500 })
}, 120_000)

afterAll(async () => {
  await proxy?.close()
  await chain?.stop()
  await database?.drop()
  await redis?.cleanup()
})

it('indexes exactly through 429s, 5xx, timeouts, truncated bodies and dropped connections', async () => {
  proxy.setFault(rotatingFaults(3, ['429', '500', '503', 'timeout', 'truncated', 'reset']))
  const head = Number(await chain.client.getBlockNumber())
  const indexer = await startTestIndexer({
    db: database.db,
    env: indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix, extra: { RPC_TIMEOUT_MS: '500', RANGE_SIZE: '4' } }),
    chains: [{ ...chain.config, rpcUrl: proxy.url }],
  })
  try {
    await waitForIndexed(database.db, chain.chainId, head, 180_000)
  } finally {
    await indexer.stop()
  }
  for (const fault of ['429', '500', '503', 'timeout', 'truncated', 'reset'] as const) expect(proxy.counts[fault]).toBeGreaterThan(0)
  expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(totalsByCode(truth))
  expect(await rowsFromIndex(database.db, chain.chainId)).toEqual(rowsFromTruth(truth))
  expect(await malformedFromIndex(database.db, chain.chainId)).toEqual(malformedFromTruth(truth))
  const [blocks] = await database.db.$client<{ n: number }[]>`select count(distinct number)::int as n from blocks where chain_id = ${chain.chainId}`
  expect(blocks!.n).toBe(head + 1)
})
