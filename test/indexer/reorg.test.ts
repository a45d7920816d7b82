import { afterAll, beforeAll, expect, it } from 'vitest'
import { appendTruth, emptyTruth, totalsByCode } from '../../devnet/ledger.js'
import { startTestChain, sendMixedTraffic, type TestChain } from '../support/chain.js'
import {
  indexerEnv,
  malformedFromIndex,
  malformedFromTruth,
  rowsFromIndex,
  rowsFromTruth,
  startTestIndexer,
  totalsFromIndex,
  waitForIndexedBlock,
} from '../support/indexer.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

let chain: TestChain
let database: TestDatabase
let redis: TestRedis

beforeAll(async () => {
  ;[chain, database, redis] = await Promise.all([startTestChain(), createTestDatabase('reorg'), createTestRedis()])
}, 120_000)

afterAll(async () => {
  await chain?.stop()
  await database?.drop()
  await redis?.cleanup()
})

async function waitForNodeHead() {
  const block = await chain.client.getBlock()
  await waitForIndexedBlock(database.db, chain.chainId, Number(block.number), block.hash!)
}

it('rolls back orphaned blocks and counts the new branch, reorg after reorg', async () => {
  const indexer = await startTestIndexer({
    db: database.db,
    env: indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix, extra: { RANGE_SIZE: '3' } }),
    chains: [chain.config],
  })
  try {
    const canonical = emptyTruth()
    appendTruth(canonical, await sendMixedTraffic(chain, { transactions: 60, blocks: 15 }))
    await waitForNodeHead()

    // [orphaned blocks, new-branch blocks]: a longer branch, a same-length branch, a shorter branch, a deep one
    const shapes: Array<[number, number]> = [
      [3, 4],
      [5, 5],
      [6, 2],
      [10, 11],
    ]
    for (const [orphaned, replacement] of shapes) {
      const snapshot = await chain.snapshot()
      // attributed traffic on the branch that will be orphaned, indexed before the reorg
      await sendMixedTraffic(chain, { transactions: orphaned * 4, blocks: orphaned })
      await waitForNodeHead()
      await chain.revert(snapshot)
      appendTruth(canonical, await sendMixedTraffic(chain, { transactions: replacement * 4, blocks: replacement }))
      await waitForNodeHead()
      expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(totalsByCode(canonical))
    }
    expect(await rowsFromIndex(database.db, chain.chainId)).toEqual(rowsFromTruth(canonical))
    expect(await malformedFromIndex(database.db, chain.chainId)).toEqual(malformedFromTruth(canonical))
  } finally {
    await indexer.stop()
  }
})
