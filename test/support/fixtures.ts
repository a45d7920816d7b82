import { afterAll, beforeAll, expect } from 'vitest'
import { totalsByCode, type GroundTruth } from '../../devnet/ledger.js'
import { startTestChain, type TestChain } from './chain.js'
import { malformedFromIndex, malformedFromTruth, rowsFromIndex, rowsFromTruth, totalsFromIndex } from './indexer.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from './services.js'
import type { Database } from '../../src/db/client.js'

export type ChainServices = { chain: TestChain; database: TestDatabase; redis: TestRedis }

/**
 * What most indexer tests start with: an anvil chain with the contracts
 * deployed, a fresh database and a fresh Redis prefix, made in `beforeAll`
 * and removed in `afterAll`. Read the fields inside hooks and tests (they are
 * set once `beforeAll` ran).
 */
export function useChainServices(name: string, options: { chain?: Parameters<typeof startTestChain>[0] } = {}): ChainServices {
  const services = {} as ChainServices
  beforeAll(async () => {
    ;[services.chain, services.database, services.redis] = await Promise.all([
      startTestChain(options.chain),
      createTestDatabase(name),
      createTestRedis(),
    ])
  }, 120_000)
  afterAll(async () => {
    await services.chain?.stop()
    await services.database?.drop()
    await services.redis?.cleanup()
  })
  return services
}

/** The index of `chainId` holds exactly the ground truth: per-code totals, every attribution row and every malformed suffix. */
export async function expectIndexMatchesTruth(db: Database, chainId: number, truth: GroundTruth): Promise<void> {
  expect(await totalsFromIndex(db, chainId)).toEqual(totalsByCode(truth))
  expect(await rowsFromIndex(db, chainId)).toEqual(rowsFromTruth(truth))
  expect(await malformedFromIndex(db, chainId)).toEqual(malformedFromTruth(truth))
}
