import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { totalsByCode, type GroundTruth } from '../../devnet/ledger.js'
import { indexedThrough } from '../../src/store/ranges.js'
import { startTestChain, sendMixedTraffic, type TestChain } from '../support/chain.js'
import { indexerEnv, rowsFromIndex, rowsFromTruth, startTestIndexer, totalsFromIndex, waitForIndexed } from '../support/indexer.js'
import { startRedisServer, type RedisServer } from '../support/redis-server.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'
import { until } from '../support/poll.js'

let chain: TestChain
let database: TestDatabase
let redis: RedisServer
let truth: GroundTruth

beforeAll(async () => {
  ;[chain, database, redis] = await Promise.all([startTestChain(), createTestDatabase('redisrestart'), startRedisServer()])
  truth = await sendMixedTraffic(chain, { transactions: 300, blocks: 80 })
}, 120_000)

afterAll(async () => {
  await redis?.stop()
  await chain?.stop()
  await database?.drop()
})

it('resumes after Redis restarts empty in the middle of a backfill: exact totals', async () => {
  const head = Number(await chain.client.getBlockNumber())
  const indexer = await startTestIndexer({
    db: database.db,
    env: indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: 'restart', extra: { RANGE_SIZE: '1', WORKER_CONCURRENCY: '1' } }),
    chains: [chain.config],
  })
  try {
    await until('block 10 indexed', async () => ((await indexedThrough(database.db.$client, chain.chainId)) ?? -1) >= 10, { intervalMs: 10 })
    // every queued job is lost with it: the follower must re-enqueue what Postgres says is pending
    await redis.stop()
    // the restart lands in the middle of the backfill
    expect((await indexedThrough(database.db.$client, chain.chainId)) ?? -1).toBeLessThan(head)
    // an outage of two seconds: long enough for every connection to fail and retry (no outcome waits on it)
    await sleep(2_000)
    await redis.start()
    await waitForIndexed(database.db, chain.chainId, head, 120_000)
  } finally {
    await indexer.stop()
  }
  expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(totalsByCode(truth))
  expect(await rowsFromIndex(database.db, chain.chainId)).toEqual(rowsFromTruth(truth))
})
