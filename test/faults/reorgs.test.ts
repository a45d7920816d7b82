import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { appendTruth, emptyTruth, type GroundTruth } from '../../devnet/ledger.js'
import { createRandom } from '../../devnet/random.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { waitForIndexedBlock } from '../support/indexer.js'
import { chainsEnv } from '../support/processes.js'
import { chainTransactionCount, compareWithTruth } from './support/ground-truth.js'
import { createFaultReport } from './support/report.js'
import { startRole, type LoggedRole } from './support/roles.js'
import { faultSeed, knobs } from './support/scale.js'
import { createTrialDatabase, startPrivateServices, type PrivateServices, type TrialDatabase } from './support/services.js'

/**
 * 2. Reorgs: random reorgs of depth 1-10 on anvil (evm_snapshot, traffic on
 * the branch to be orphaned, evm_revert, a replacement branch shorter, as
 * long or longer) while a follower and a worker process follow the head
 * with no confirmations, so every reorg replaces blocks already indexed or
 * being indexed. Attributed traffic on both branches; after each reorg the
 * index must equal the canonical chain.
 */

let services: PrivateServices
let chain: TestChain
let database: TrialDatabase
let roles: LoggedRole[] = []
const canonical: GroundTruth = emptyTruth()

const report = createFaultReport({
  fault: '2-reorgs',
  title: '2. Reorgs of depth 1-10 during live following',
  checked:
    'follower + worker processes, 0 confirmations, ranges of 3 blocks; per trial: snapshot, attributed traffic on 1-10 blocks, (mostly) wait until indexed, ' +
    'revert, attributed traffic on a 1-11 block replacement branch; rows, per-code totals and malformed suffixes equal the canonical chain; ranges cover every block once; transactions scanned = transactions on chain',
  testFile: 'test/faults/reorgs.test.ts',
})

beforeAll(async () => {
  ;[services, chain] = await Promise.all([startPrivateServices(), startTestChain({ seed: faultSeed })])
  database = await createTrialDatabase(services.postgres, 'reorgs')
  appendTruth(canonical, await sendMixedTraffic(chain, { transactions: 80, blocks: 16 }))
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL: services.redis.url,
    QUEUE_PREFIX: 'reorgs',
    LOG_LEVEL: 'info',
    DEVNET: 'false',
    CHAINS: chainsEnv([{ ...chain.config, confirmations: 0, pollIntervalMs: 100 }]),
    RANGE_SIZE: '3',
    WORKER_CONCURRENCY: '2',
    JOB_LOCK_MS: '2000',
  }
  roles = [startRole('follower', env, 'reorgs-follower'), startRole('worker', env, 'reorgs-worker')]
}, 300_000)

afterAll(async () => {
  await Promise.all(roles.map((role) => role.kill('SIGTERM')))
  await database?.drop()
  await chain?.stop()
  await services?.stop()
})

async function waitForNodeHead() {
  const block = await chain.client.getBlock()
  await waitForIndexedBlock(database.db, chain.chainId, Number(block.number), block.hash!, 120_000)
  return Number(block.number)
}

it(`${knobs.reorgTrials} random reorgs of depth 1-10: after each, the index equals the canonical chain`, async () => {
  const random = createRandom(faultSeed + 2)
  await waitForNodeHead()
  const inexact: string[] = []
  for (let trial = 1; trial <= knobs.reorgTrials; trial++) {
    const started = Date.now()
    const depth = 1 + Math.floor(random.next() * 10)
    const replacement = 1 + Math.floor(random.next() * 11)
    // most reorgs replace blocks the index already holds; some land while the orphaned branch is still being indexed
    const waitForOrphan = random.next() < 0.75
    const snapshot = await chain.snapshot()
    const forkBlock = Number(await chain.client.getBlockNumber())
    const orphaned = await sendMixedTraffic(chain, { transactions: depth * 5, blocks: depth })
    if (waitForOrphan) await waitForNodeHead()
    else await sleep(Math.floor(random.next() * 300))
    await chain.revert(snapshot)
    const replacing = await sendMixedTraffic(chain, { transactions: replacement * 5, blocks: replacement })
    appendTruth(canonical, replacing)
    const head = await waitForNodeHead()
    const comparison = await compareWithTruth({
      db: database.db,
      chainId: chain.chainId,
      truth: canonical,
      head,
      chainTransactions: await chainTransactionCount(chain.rpcUrl, head),
    })
    const bothBranchesAttributed = orphaned.attributions.length > 0 && replacing.attributions.length > 0
    report.record({
      trial,
      lost: comparison.lost,
      doubled: comparison.doubled,
      ok: comparison.exact && bothBranchesAttributed,
      durationMs: Date.now() - started,
      details: {
        forkBlock,
        depth,
        replacement,
        orphanIndexedBeforeRevert: waitForOrphan,
        orphanedRows: orphaned.attributions.length,
        replacingRows: replacing.attributions.length,
        ...comparison,
      },
    })
    if (!comparison.exact || !bothBranchesAttributed) inexact.push(`trial ${trial} (depth ${depth}, replacement ${replacement}): ${JSON.stringify(comparison)}`)
  }
  expect(inexact).toEqual([])
  // the follower rolled back at least every reorg that replaced blocks it had indexed, and no process died over them
  const rollbacks = roles[0]!.log().split('rolled back; re-indexing the new branch').length - 1
  const indexedOrphans = report.result().records.filter((record) => record.details?.orphanIndexedBeforeRevert).length
  expect(rollbacks).toBeGreaterThanOrEqual(indexedOrphans)
  for (const role of roles) expect(role.child.exitCode).toBeNull()
})
