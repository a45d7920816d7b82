import type { GroundTruth } from '../../devnet/ledger.js'
import { runRoles, type Running } from '../../src/bin/roles.js'
import { loadConfig } from '../../src/config/env.js'
import { createLogger } from '../../src/logger.js'
import { sendMixedTraffic, startTestChain, type TestChain } from './chain.js'
import { indexerEnv, waitForIndexed } from './indexer.js'
import { chainsEnv } from './processes.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from './services.js'

export type AllInOne = { chain: TestChain; database: TestDatabase; redis: TestRedis; running: Running; truth: GroundTruth; head: number; stop(): Promise<void> }

/**
 * Every role in one process (the API, the follower and the workers, as
 * `attribution start` runs them) over a fresh anvil with mixed traffic,
 * returned once it has indexed the chain's head.
 */
export async function startAllInOne(name: string, traffic: { transactions: number; blocks: number }): Promise<AllInOne> {
  const [chain, database, redis] = await Promise.all([startTestChain(), createTestDatabase(name), createTestRedis()])
  const truth = await sendMixedTraffic(chain, traffic)
  const head = Number(await chain.client.getBlockNumber())
  const config = loadConfig({
    ...indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix }),
    CHAINS: chainsEnv([chain.config]),
    PORT: '0',
  })
  const running = await runRoles(config, new Set(['api', 'follower', 'worker']), createLogger({ level: 'silent' }))
  await waitForIndexed(database.db, chain.chainId, head)
  return {
    chain,
    database,
    redis,
    running,
    truth,
    head,
    async stop() {
      await running.stop()
      await chain.stop()
      await database.drop()
      await redis.cleanup()
    },
  }
}
