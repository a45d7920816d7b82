import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { appendTruth, emptyTruth, type GroundTruth } from '../../devnet/ledger.js'
import { createRandom } from '../../devnet/random.js'
import { indexedThrough } from '../../src/store/ranges.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { chainsEnv } from '../support/processes.js'
import { httpFaults, startRpcProxy, type RpcProxy } from '../support/rpc-proxy.js'
import { chainTransactionCount, compareWithTruth } from './support/ground-truth.js'
import { createFaultReport } from './support/report.js'
import { startRole, until, type LoggedRole } from './support/roles.js'
import { faultSeed, knobs } from './support/scale.js'
import { createTrialDatabase, startPrivateServices, type PrivateServices, type TrialDatabase } from './support/services.js'

/**
 * 4. RPC faults: the follower and a worker process read the chain through a
 * proxy that answers 429 (with Retry-After), 5xx, hangs, truncated JSON,
 * dropped connections and JSON-RPC errors, shuffles batch answers, trades
 * answers between ids, and sends part of the requests to a node that is
 * behind. Nothing may be
 * skipped or counted twice, and lag is never taken for a reorg.
 */

let services: PrivateServices
let chain: TestChain
let proxy: RpcProxy
const truth: GroundTruth = emptyTruth()
const random = createRandom(faultSeed + 4)

beforeAll(async () => {
  ;[services, chain] = await Promise.all([startPrivateServices(), startTestChain({ seed: faultSeed })])
  appendTruth(truth, await sendMixedTraffic(chain, { transactions: knobs.rpcTransactions, blocks: Math.ceil(knobs.rpcTransactions / 25) }))
  proxy = await startRpcProxy({ target: chain.rpcUrl, random, hangMs: 1_500 })
}, 300_000)

afterAll(async () => {
  await proxy?.close()
  await chain?.stop()
  await services?.stop()
})

function indexerEnv(database: TrialDatabase, confirmations: number): Record<string, string> {
  return {
    DATABASE_URL: database.url,
    REDIS_URL: services.redis.url,
    QUEUE_PREFIX: database.name,
    LOG_LEVEL: 'info',
    DEVNET: 'false',
    CHAINS: chainsEnv([{ ...chain.config, rpcUrl: proxy.url, confirmations, pollIntervalMs: 100 }]),
    RANGE_SIZE: '4',
    WORKER_CONCURRENCY: '3',
    JOB_LOCK_MS: '2000',
    // hung requests give up quickly and are retried
    RPC_TIMEOUT_MS: '500',
  }
}

const rollbacksIn = (roles: LoggedRole[]) => roles.reduce((sum, role) => sum + role.log().split('rolling back').length - 1, 0)
const retriesIn = (roles: LoggedRole[]) => roles.reduce((sum, role) => sum + role.log().split('range failed; will retry').length - 1, 0)
const countsSnapshot = () => ({ ...proxy.counts })
function countsSince(before: Record<string, number>) {
  return Object.fromEntries(Object.entries(proxy.counts).map(([key, value]) => [key, value - (before[key] ?? 0)]))
}

describe('4. RPC faults', () => {
  const backfillReport = createFaultReport({
    fault: '4a-rpc-faults-backfill',
    title: '4a. RPC faults during a backfill',
    checked:
      '20% of HTTP requests fail (429 + Retry-After, 500/502/503, hang past the 500 ms timeout, truncated JSON, reset, JSON-RPC -32005 per item), ' +
      'batch answers shuffled, 10% of batches with two answers traded between ids (block N answered with block M, receipts swapped), ' +
      '30% of requests served by a node 1-20 blocks behind; rows, totals, malformed equal ground truth, ranges cover every block once, ' +
      'transactions scanned = transactions on chain, no rollback logged',
    testFile: 'test/faults/rpc-faults.test.ts',
    testName: 'backfill',
  })

  it(`backfill through the faulty proxy, ${knobs.rpcTrials} trial(s): exact, nothing skipped, no false reorg`, async () => {
    const head = Number(await chain.client.getBlockNumber())
    const chainTransactions = await chainTransactionCount(chain.rpcUrl, head)
    const failures: string[] = []
    for (let trial = 1; trial <= knobs.rpcTrials; trial++) {
      const started = Date.now()
      const database = await createTrialDatabase(services.postgres, `rpc_backfill_${trial}`)
      proxy.setChaos({ faultRate: 0.2, faults: httpFaults, laggingShare: 0.3, maxLag: 20, shuffleBatches: true, swapResults: 0.1 })
      const before = countsSnapshot()
      const env = indexerEnv(database, 0)
      const roles = [startRole('follower', env, `${database.name}-follower`), startRole('worker', env, `${database.name}-worker`)]
      try {
        await until(`backfill through ${head}`, async () => ((await indexedThrough(database.db.$client, chain.chainId)) ?? -1) >= head, 600_000)
        await Promise.all(roles.map((role) => role.kill('SIGTERM')))
        const comparison = await compareWithTruth({ db: database.db, chainId: chain.chainId, truth, head, chainTransactions })
        const faults = countsSince(before)
        const rollbacks = rollbacksIn(roles)
        const everyFaultInjected = httpFaults.every((fault) => (faults[fault] ?? 0) > 0) && (faults.lagging ?? 0) > 0 && (faults.shuffled ?? 0) > 0 && (faults.swapped ?? 0) > 0
        const ok = comparison.exact && rollbacks === 0 && everyFaultInjected
        backfillReport.record({
          trial,
          lost: comparison.lost,
          doubled: comparison.doubled,
          ok,
          durationMs: Date.now() - started,
          details: { faults, rangeRetries: retriesIn(roles), rollbacks, ...comparison },
        })
        if (!ok) failures.push(`trial ${trial}: rollbacks ${rollbacks}, faults ${JSON.stringify(faults)}, ${JSON.stringify(comparison)}`)
      } finally {
        proxy.setChaos({ faultRate: 0, laggingShare: 0, shuffleBatches: false, swapResults: 0 })
        await Promise.all(roles.map((role) => role.kill('SIGTERM')))
        await database.drop()
      }
    }
    expect(failures).toEqual([])
  })

  const lagReport = createFaultReport({
    fault: '4b-rpc-lagging-node',
    title: '4b. Lagging node while following the head',
    checked:
      '3 confirmations; half the requests reach a node 1-8 blocks behind (beyond the window), 10% of requests fail, 5% of batches swap answers; blocks with attributed traffic are mined while ' +
      'following; no rollback and no reorg logged, the index equals ground truth through head - 3, ranges cover every block once',
    testFile: 'test/faults/rpc-faults.test.ts',
    testName: 'lagging',
  })

  it(`follows the head through a lagging load-balanced node over ${knobs.lagBlocks} new blocks: no false reorg, exact`, async () => {
    const started = Date.now()
    const confirmations = 3
    const database = await createTrialDatabase(services.postgres, 'rpc_lagging')
    const before = countsSnapshot()
    const env = indexerEnv(database, confirmations)
    const roles = [startRole('follower', env, `${database.name}-follower`), startRole('worker', env, `${database.name}-worker`)]
    try {
      const startHead = Number(await chain.client.getBlockNumber())
      await until('caught up', async () => ((await indexedThrough(database.db.$client, chain.chainId)) ?? -1) >= startHead - confirmations, 300_000)
      proxy.setChaos({ faultRate: 0.1, faults: httpFaults, laggingShare: 0.5, maxLag: 8, shuffleBatches: true, swapResults: 0.05 })
      for (let block = 0; block < knobs.lagBlocks; block++) {
        appendTruth(truth, await sendMixedTraffic(chain, { transactions: 4, blocks: 1 }))
        await sleep(50 + Math.floor(random.next() * 200))
      }
      // every traffic block sits below the confirmation window
      await chain.mine(confirmations)
      const head = Number(await chain.client.getBlockNumber())
      const target = head - confirmations
      await until(`indexed through ${target}`, async () => ((await indexedThrough(database.db.$client, chain.chainId)) ?? -1) >= target, 300_000)
      await Promise.all(roles.map((role) => role.kill('SIGTERM')))
      const comparison = await compareWithTruth({
        db: database.db,
        chainId: chain.chainId,
        truth,
        head: target,
        chainTransactions: await chainTransactionCount(chain.rpcUrl, target),
      })
      const faults = countsSince(before)
      const rollbacks = rollbacksIn(roles)
      const reorgLines = roles.reduce((sum, role) => sum + role.log().split('REORG').length - 1 + role.log().split('reorg:').length - 1, 0)
      lagReport.record({
        trial: 1,
        lost: comparison.lost,
        doubled: comparison.doubled,
        ok: comparison.exact && rollbacks === 0 && reorgLines === 0,
        durationMs: Date.now() - started,
        details: { faults, rangeRetries: retriesIn(roles), rollbacks, reorgLines, ...comparison },
      })
      expect(faults.lagging).toBeGreaterThan(0)
      expect({ rollbacks, reorgLines }).toEqual({ rollbacks: 0, reorgLines: 0 })
      expect(comparison).toMatchObject({ exact: true })
    } finally {
      proxy.setChaos({ faultRate: 0, laggingShare: 0, shuffleBatches: false, swapResults: 0 })
      await Promise.all(roles.map((role) => role.kill('SIGTERM')))
      await database.drop()
    }
  })
})
