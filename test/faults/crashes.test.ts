import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GroundTruth } from '../../devnet/ledger.js'
import { createRandom, type Random } from '../../devnet/random.js'
import { indexedThrough } from '../../src/store/ranges.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { chainsEnv } from '../support/processes.js'
import { chainTransactionCount, compareWithTruth, type Comparison } from './support/ground-truth.js'
import { createFaultReport } from './support/report.js'
import { startRole, until, type LoggedRole } from './support/roles.js'
import { faultSeed, knobs } from './support/scale.js'
import { createTrialDatabase, startPrivateServices, type PrivateServices, type TrialDatabase } from './support/services.js'

/**
 * 1. Crashes: SIGKILL of a worker process, of the active follower (a second
 * follower waits to take over) and of an all-in-one process, at a random
 * moment of a backfill of the same ground-truth chain, restarted each time.
 * Every trial starts from an empty database and must end exactly equal to
 * the ground truth.
 */

let services: PrivateServices
let chain: TestChain
let truth: GroundTruth
let head: number
let chainTransactions: number

beforeAll(async () => {
  ;[services, chain] = await Promise.all([startPrivateServices(), startTestChain({ seed: faultSeed })])
  truth = await sendMixedTraffic(chain, { transactions: knobs.crashTransactions, blocks: knobs.crashBlocks })
  head = Number(await chain.client.getBlockNumber())
  chainTransactions = await chainTransactionCount(chain.rpcUrl, head)
}, 600_000)

afterAll(async () => {
  await chain?.stop()
  await services?.stop()
})

/** Small ranges and a short pending window keep the follower busy cutting ranges for the whole backfill. */
function roleEnv(database: TrialDatabase): Record<string, string> {
  return {
    DATABASE_URL: database.url,
    DATABASE_POOL_SIZE: '4',
    REDIS_URL: services.redis.url,
    QUEUE_PREFIX: database.name,
    LOG_LEVEL: 'info',
    DEVNET: 'false',
    CHAINS: chainsEnv([chain.config]),
    POLL_INTERVAL_MS: '100',
    RANGE_SIZE: '5',
    MAX_PENDING_RANGES: '8',
    WORKER_CONCURRENCY: '4',
    // a killed worker's ranges are picked up again after this
    JOB_LOCK_MS: '2000',
    PORT: '0',
  }
}

const through = async (database: TrialDatabase) => (await indexedThrough(database.db.$client, chain.chainId)) ?? -1

/**
 * A random point of the backfill: once a random block is indexed, up to a
 * tenth of a second more, so the kill lands anywhere in a job (its commit
 * included) while ranges beyond it are still in flight.
 */
async function waitForRandomMoment(database: TrialDatabase, random: Random) {
  const block = Math.floor(head * (0.03 + random.next() * 0.72))
  const deadline = Date.now() + 300_000
  while ((await through(database)) < block) {
    if (Date.now() > deadline) throw new Error(`block ${block} not indexed after 300 s`)
    await sleep(10)
  }
  await sleep(Math.floor(random.next() * 100))
  return { killAtBlock: block, indexedThroughAtKill: await through(database) }
}

async function stopAll(roles: LoggedRole[]) {
  await Promise.all(roles.map((role) => role.kill('SIGTERM')))
}

type CrashKind = 'worker' | 'follower' | 'all-in-one'

const reports = {
  worker: createFaultReport({
    fault: '1a-crash-worker',
    title: '1a. SIGKILL of a worker process',
    checked: 'backfill by a follower and a worker process; the worker is SIGKILLed at a random moment and restarted; rows, per-code totals, malformed suffixes equal ground truth; ranges cover every block once; transactions scanned = transactions on chain',
    testFile: 'test/faults/crashes.test.ts',
    testName: 'worker',
  }),
  follower: createFaultReport({
    fault: '1b-crash-follower',
    title: '1b. SIGKILL of the active follower',
    checked: 'two follower processes (Postgres advisory lock) and a worker; the follower holding the lock is SIGKILLed at a random moment, the other takes over, the killed one is restarted as standby; same exactness checks',
    testFile: 'test/faults/crashes.test.ts',
    testName: 'follower',
  }),
  'all-in-one': createFaultReport({
    fault: '1c-crash-all-in-one',
    title: '1c. SIGKILL of an all-in-one process',
    checked: '`attribution start` (API, follower, workers, delivery worker in one process) SIGKILLed at a random moment of the backfill and restarted; same exactness checks',
    testFile: 'test/faults/crashes.test.ts',
    testName: 'all-in-one',
  }),
}

/** Which of the followers holds the chain lock (it says so in its log). */
function activeFollower(followers: LoggedRole[]): LoggedRole | undefined {
  const holding = followers.filter((follower) => follower.child.exitCode === null && follower.child.signalCode === null && follower.logged('follower lock acquired'))
  return holding.length === 1 ? holding[0] : undefined
}

async function crashTrial(kind: CrashKind, trial: number): Promise<Comparison> {
  const random = createRandom(faultSeed + trial * 101 + kind.length)
  const started = Date.now()
  const database = await createTrialDatabase(services.postgres, `crash_${kind.replaceAll('-', '_')}_${trial}`)
  const env = roleEnv(database)
  const roles: LoggedRole[] = []
  const start = (role: Parameters<typeof startRole>[0], name: string) => {
    const started_ = startRole(role, env, `${database.name}-${name}`)
    roles.push(started_)
    return started_
  }
  let details: Record<string, unknown> = {}
  try {
    if (kind === 'worker') {
      start('follower', 'follower')
      const worker = start('worker', 'worker')
      details = await waitForRandomMoment(database, random)
      await worker.kill('SIGKILL')
      start('worker', 'worker-restarted')
    } else if (kind === 'follower') {
      const followers = [start('follower', 'follower-1'), start('follower', 'follower-2')]
      start('worker', 'worker')
      await until('one follower holding the lock', () => activeFollower(followers) !== undefined)
      details = await waitForRandomMoment(database, random)
      const active = activeFollower(followers)!
      await active.kill('SIGKILL')
      followers.push(start('follower', 'follower-restarted'))
      details.killed = active.name
    } else {
      const process_ = start('start', 'start')
      details = await waitForRandomMoment(database, random)
      await process_.kill('SIGKILL')
      start('start', 'start-restarted')
    }
    details.killedBeforeDone = (details.indexedThroughAtKill as number) < head
    await until(`backfill through block ${head}`, async () => (await through(database)) >= head, 300_000)
    if (kind === 'follower') {
      // the survivor (or the restarted one) takes the lock over from the killed follower; when the
      // killed one had already queued every range, the worker can finish the backfill before the
      // standby's next try for the lock, so wait for the takeover rather than read it at once
      const takers = () => roles.filter((role) => role.name.includes('follower') && role.name !== details.killed && role.logged('follower lock acquired')).map((role) => role.name)
      await until('another follower holding the lock', () => takers().length > 0).catch(() => undefined)
      details.takeover = takers()
    }
    await stopAll(roles)
    const comparison = await compareWithTruth({ db: database.db, chainId: chain.chainId, truth, head, chainTransactions })
    reports[kind].record({
      trial,
      lost: comparison.lost,
      doubled: comparison.doubled,
      ok: comparison.exact && details.killedBeforeDone === true,
      durationMs: Date.now() - started,
      details: { ...details, ...comparison },
    })
    return comparison
  } catch (error) {
    reports[kind].record({ trial, lost: 0, doubled: 0, ok: false, durationMs: Date.now() - started, details: { ...details, error: String(error) } })
    throw new Error(`${kind} crash trial ${trial}: ${String(error)}\n${roles.map((role) => `--- ${role.name}\n${role.output()}`).join('\n')}`)
  } finally {
    await stopAll(roles)
    await database.drop()
  }
}

describe.each(['worker', 'follower', 'all-in-one'] as const)('SIGKILL of the %s process during a backfill', (kind) => {
  it(`${knobs.crashTrials} trials over ${knobs.crashTransactions.toLocaleString('en')} transactions: each one exactly equal to ground truth`, async () => {
    const inexact: string[] = []
    for (let trial = 1; trial <= knobs.crashTrials; trial++) {
      const comparison = await crashTrial(kind, trial)
      if (!comparison.exact) inexact.push(`trial ${trial}: ${JSON.stringify(comparison)}`)
    }
    const records = reports[kind].result().records
    expect(inexact).toEqual([])
    // every kill landed before the backfill was done, so every trial really recovered from it
    expect(records.filter((record) => record.details?.killedBeforeDone !== true)).toEqual([])
    if (kind === 'follower') expect(records.filter((record) => (record.details?.takeover as string[]).length === 0)).toEqual([])
  })
})
