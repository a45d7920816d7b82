import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GroundTruth } from '../../devnet/ledger.js'
import { indexedThrough } from '../../src/store/ranges.js'
import { startTestChain, sendMixedTraffic, type TestChain } from '../support/chain.js'
import { indexerEnv, startTestIndexer, waitForIndexed } from '../support/indexer.js'
import { chainsEnv, spawnRole, type RoleProcess } from '../support/processes.js'
import { createTestDatabase, createTestRedis, type TestDatabase } from '../support/services.js'
import { until } from '../support/poll.js'
import { expectIndexMatchesTruth } from '../support/fixtures.js'

let chain: TestChain
let truth: GroundTruth
let head: number

beforeAll(async () => {
  chain = await startTestChain()
  truth = await sendMixedTraffic(chain, { transactions: 400, blocks: 100 })
  head = Number(await chain.client.getBlockNumber())
}, 180_000)

afterAll(async () => {
  await chain?.stop()
})

const expectExact = (database: TestDatabase) => expectIndexMatchesTruth(database.db, chain.chainId, truth)

/**
 * Waits for the backfill to reach the head; if it does not, the error says
 * why: the ranges still pending, with their failures, and what the workers
 * printed last.
 */
async function waitForBackfill(database: TestDatabase, workers: RoleProcess[]) {
  try {
    await waitForIndexed(database.db, chain.chainId, head, 120_000)
  } catch (error) {
    const pending = await database.db.$client`
      select from_block, to_block, status, attempts, last_error from ranges where status <> 'done' order by from_block limit 10`
    const printed = workers.map((worker, i) => `worker ${i} (exit ${worker.child.exitCode ?? worker.child.signalCode}):\n${worker.output()}`)
    throw new Error([(error as Error).message, `ranges not done: ${JSON.stringify(pending)}`, ...printed].join('\n'))
  }
}

/**
 * Backfill with the follower in this process and workers as child processes
 * (`attribution worker`), as an operator would run them.
 */
async function withBackfill(name: string, body: (ctx: { database: TestDatabase; workerEnv: Record<string, string> }) => Promise<void>) {
  const [database, redis] = await Promise.all([createTestDatabase(name), createTestRedis()])
  const env = indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix, extra: { RANGE_SIZE: '2', JOB_LOCK_MS: '2000' } })
  const follower = await startTestIndexer({ db: database.db, env, chains: [chain.config], roles: { follower: true, worker: false } })
  const workerEnv = { ...env, CHAINS: chainsEnv([chain.config]), WORKER_CONCURRENCY: '2', LOG_LEVEL: 'warn' }
  try {
    await body({ database, workerEnv })
  } finally {
    await follower.stop()
    await database.drop()
    await redis.cleanup()
  }
}

async function waitForProgress(database: TestDatabase, beyond: number, timeoutMs = 30_000): Promise<number> {
  const through = async () => (await indexedThrough(database.db.$client, chain.chainId)) ?? -1
  return until(`progress beyond block ${beyond}`, async () => {
    const now = await through()
    return now > beyond && now
  }, { timeoutMs, intervalMs: 20 })
}

describe('worker crashes during a backfill', () => {
  it('SIGKILL of the worker at several points, restarted each time: exact totals and rows', async () => {
    await withBackfill('crash', async ({ database, workerEnv }) => {
      const killPoints = [8, 30, 55, 80]
      let worker: RoleProcess | undefined
      for (const point of killPoints) {
        worker = spawnRole('worker', workerEnv)
        await waitForProgress(database, point)
        // a random extra moment so the kill lands anywhere inside a job, including mid-commit
        await sleep(Math.floor(Math.random() * 150))
        await worker.kill('SIGKILL')
      }
      worker = spawnRole('worker', workerEnv)
      try {
        await waitForBackfill(database, [worker])
      } finally {
        await worker.kill('SIGTERM')
      }
      await expectExact(database)
    })
  }, 180_000)

  it('two worker processes on the same queue: exact totals and rows', async () => {
    await withBackfill('two_workers', async ({ database, workerEnv }) => {
      const workers = [spawnRole('worker', workerEnv), spawnRole('worker', workerEnv)]
      try {
        await waitForBackfill(database, workers)
      } finally {
        await Promise.all(workers.map((w) => w.kill('SIGTERM')))
      }
      await expectExact(database)
      const [ranges] = await database.db.$client<{ done: number; pending: number }[]>`
        select count(*) filter (where status = 'done')::int as done, count(*) filter (where status = 'pending')::int as pending from ranges`
      expect(ranges!.pending).toBe(0)
      expect(ranges!.done).toBe(Math.ceil((head + 1) / 2))
    })
  }, 180_000)
})
