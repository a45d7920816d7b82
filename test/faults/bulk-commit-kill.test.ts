import type postgres from 'postgres'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { GroundTruth } from '../../devnet/ledger.js'
import { startTestChain, sendMixedTraffic, type TestChain } from '../support/chain.js'
import { expectIndexExact, expectNothingHalfCommitted, finalThroughOf, readyRollingWindows } from '../support/final-exact.js'
import { indexerEnv, startTestIndexer, waitForIndexed } from '../support/indexer.js'
import { until } from '../support/poll.js'
import { chainsEnv, spawnRole, type RoleProcess } from '../support/processes.js'
import { chainTransactionCount, compareWithTruth } from './support/ground-truth.js'
import { createFaultReport } from './support/report.js'
import { faultScale, faultSeed } from './support/scale.js'
import { createTrialDatabase, startPrivateServices, type PrivateServices, type TrialDatabase } from './support/services.js'

/**
 * kill -9 of the worker process while a bulk commit (store/bulk-commit.ts)
 * is in flight, five times, at five points of its transaction: waiting to
 * hold the sender tables alone, its ranges flipped to done, its folded
 * aggregates being written, its rows being copied, its suffixes being copied.
 * The commit is held at each point by a lock this test takes on the table
 * it writes next, so the kill lands there for certain: the positive signal
 * is the worker's backend seen in pg_stat_activity waiting at that very
 * statement while it holds (or waits for) the bulk path's exclusive lock on
 * the sender tables. After each kill nothing of that commit is left; after
 * the last the backfill completes and the index is exact against the
 * traffic's ground truth: rows, totals, each row's sender against the
 * chain, distinct senders and every rolling window.
 */

let services: PrivateServices
let chain: TestChain
let truth: GroundTruth
let head: number
let database: TrialDatabase

const report = createFaultReport({
  fault: '11-kill-bulk-commit',
  title: '11. kill -9 of the worker during a bulk commit, at five points of its transaction',
  checked:
    'follower in the test, worker processes, ranges of 2 blocks, anvil finalized = head - 64; per kill: the commit held at its point by a table lock, ' +
    'seen waiting there in pg_stat_activity holding the bulk lock, SIGKILL, nothing of it left (rows, blocks, final boundary only in ranges done); ' +
    'then rows, per-code totals, malformed suffixes, senders against the chain, distinct senders and every rolling window exact',
  testFile: 'test/faults/bulk-commit-kill.test.ts',
})

beforeAll(async () => {
  ;[services, chain] = await Promise.all([startPrivateServices(), startTestChain({ seed: faultSeed })])
  database = await createTrialDatabase(services.postgres, 'bulk_kill')
  // the reduced pass (CI) still leaves dozens of bulk batches below the boundary (head - 64) for the five kills
  truth = await sendMixedTraffic(chain, faultScale === 'reduced' ? { transactions: 240, blocks: 130 } : { transactions: 400, blocks: 200 })
  head = Number(await chain.client.getBlockNumber())
  await readyRollingWindows(database.db)
}, 600_000)

afterAll(async () => {
  await chain?.stop()
  await database?.drop()
  await services?.stop()
})

/** The bulk path's lock over the distinct-sender tables (store/final-refs.ts), as pg_locks spells an advisory bigint key. */
const REFS_WRITERS_KEY = `hashtextextended('attribution_refs_writers', 0)`
const refsWritersLock = `locktype = 'advisory' and ((classid::bigint << 32) | objid::bigint) = ${REFS_WRITERS_KEY}`

type KillPoint = {
  name: string
  /** Taken by the test in its own transaction: the bulk commit waits here. */
  hold: string
  /** The statement the commit's backend waits in (pg_stat_activity.query, ILIKE: its first track_activity_query_size bytes). */
  statement: string
}

const KILL_POINTS: KillPoint[] = [
  {
    name: 'transaction open, waiting to hold the sender tables alone',
    hold: `select pg_advisory_xact_lock_shared(${REFS_WRITERS_KEY})`,
    statement: `%pg_advisory_xact_lock(hashtextextended('attribution_refs_writers'%`,
  },
  { name: 'ranges flipped to done, the final boundary being recorded', hold: 'lock table chain_finality in exclusive mode', statement: '%insert into chain_finality%' },
  { name: 'blocks stored, the folded aggregates being written', hold: 'lock table code_daily_totals in exclusive mode', statement: '%with%"code_daily_totals" as (%insert into "code_daily_totals"%' },
  { name: 'aggregates written, attribution rows being copied', hold: 'lock table attributions in exclusive mode', statement: '%copy attributions (%' },
  { name: 'rows copied, suffixes being copied', hold: 'lock table attribution_suffixes in exclusive mode', statement: '%copy attribution_suffixes (%' },
]

/** The backend of a bulk commit waiting at `point`: it waits on a lock in that statement and holds (or, at the first point, awaits) the sender tables alone. */
async function bulkCommitWaitingAt(sql: postgres.Sql, point: KillPoint): Promise<number | false> {
  const [row] = await sql<{ pid: number }[]>`
    select a.pid from pg_stat_activity a
    where a.datname = current_database() and a.pid <> pg_backend_pid() and a.wait_event_type = 'Lock' and a.query ilike ${point.statement}
      and exists (select 1 from pg_locks l where l.pid = a.pid and l.mode = 'ExclusiveLock' and ${sql.unsafe(refsWritersLock)})
    limit 1`
  return row?.pid ?? false
}

/** For a wait that gives up: the database's backends, the ranges left, the boundary, what the worker printed. */
async function whereThingsStand(sql: postgres.Sql, worker: RoleProcess): Promise<string> {
  const backends = await sql`
    select pid, state, wait_event_type, wait_event, left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 120) as query
    from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
  const ranges = await sql`select status, count(*)::int as n, min(from_block)::int as lowest from ranges group by status`
  const final = await sql`select final_through::int from chain_finality`
  return JSON.stringify({ backends, ranges, final, head }, null, 1) + `\n${worker.output()}`
}

const doneRanges = async (sql: postgres.Sql) => (await sql<{ n: number }[]>`select count(*)::int as n from ranges where status = 'done'`)[0]!.n

it('kill -9 five times, each during a bulk commit: nothing of it left, then the index exact', async () => {
  const sql = database.db.$client
  const env = indexerEnv({ databaseUrl: database.url, redisUrl: services.redis.url, prefix: 'bulk_kill', extra: { RANGE_SIZE: '2', JOB_LOCK_MS: '2000' } })
  const follower = await startTestIndexer({ db: database.db, env, chains: [chain.config], roles: { follower: true, worker: false } })
  const workerEnv = { ...env, CHAINS: chainsEnv([chain.config]), WORKER_CONCURRENCY: '2', LOG_LEVEL: 'warn' }
  const kills: Array<{ point: string; pid: number }> = []
  let worker: RoleProcess | undefined
  try {
    for (const [trial, point] of KILL_POINTS.entries()) {
      const started = Date.now()
      const before = await doneRanges(sql)
      // held before the worker starts: its first bulk commit stops at the point. Taken after a first commit, the
      // hold could come when the worker had already committed every range below the finalized block (the
      // commits got faster), or a tip commit holding the sender tables shared could meet it first (a CI run)
      const holder = await sql.reserve()
      try {
        await holder`begin`
        await holder.unsafe(point.hold)
        // the previous worker's ranges are picked up again once their locks lapse
        worker = spawnRole('worker', workerEnv)
        const pid = await until(`a bulk commit waiting at: ${point.name}`, () => bulkCommitWaitingAt(sql, point), {
          timeoutMs: 60_000,
          describe: () => whereThingsStand(sql, worker!),
        })
        await worker.kill('SIGKILL')
        kills.push({ point: point.name, pid })
      } finally {
        await holder`rollback`
        holder.release()
      }
      // its backend, let go, finds its client gone and aborts the transaction
      await until('the killed commit’s backend to end', async () => (await sql`select 1 from pg_stat_activity where pid = ${kills.at(-1)!.pid}`).length === 0)
      await expectNothingHalfCommitted(database.db, chain.chainId)
      report.record({ trial: trial + 1, lost: 0, doubled: 0, ok: true, durationMs: Date.now() - started, details: { point: point.name, doneBefore: before, doneAfter: await doneRanges(sql) } })
    }
    expect(kills.map((kill) => kill.point)).toEqual(KILL_POINTS.map((point) => point.name))

    worker = spawnRole('worker', workerEnv)
    try {
      await waitForIndexed(database.db, chain.chainId, head, 120_000)
    } finally {
      await worker.kill('SIGTERM')
    }
  } finally {
    await worker?.kill('SIGKILL')
    await follower.stop()
  }
  await expectNothingHalfCommitted(database.db, chain.chainId)
  const comparison = await compareWithTruth({ db: database.db, chainId: chain.chainId, truth, head, chainTransactions: await chainTransactionCount(chain.rpcUrl, head) })
  report.record({ trial: KILL_POINTS.length + 1, lost: comparison.lost, doubled: comparison.doubled, ok: comparison.exact, durationMs: 0, details: { after: 'every kill', ...comparison } })
  expect(comparison.exact).toBe(true)
  await expectIndexExact(database.db, chain, truth)
  // the backfill below the node's finalized block (anvil: 64 behind its head) went the bulk way
  const finalThrough = await finalThroughOf(database.db, chain.chainId)
  expect(finalThrough).toBeGreaterThanOrEqual(head - 64 - 1)
  expect(finalThrough).toBeLessThanOrEqual(head - 64)
}, 600_000)
