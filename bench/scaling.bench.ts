import { profileSpec } from './chain/node-profiles.js'
import { denseChainParams } from './chain/generate.js'
import type { Bench } from './lib/bench.js'
import { serveChain } from './lib/chain-setup.js'
import { requireIndexer } from './lib/indexer.js'
import { runBackfill } from './lib/pipeline-run.js'
import { fmt, printTable } from './lib/report.js'

/**
 * The ceiling of scale-out (issue 40.4): the dense chain backfilled with 1,
 * 2 and 4 worker processes on one PostgreSQL — the all-in-one indexer plus
 * `attribution worker` processes on its database and queue — on the fast
 * node profile. Per run: attributions a second, and the PostgreSQL CPU per
 * attribution row (every backend of the run's database). How many
 * attributions a second one PostgreSQL core absorbs is 1 / that CPU; past
 * it, more workers only queue on the database.
 *
 * `BENCH_SCALING_WORKERS` (default `1,2,4`) and `BENCH_SCALING_BLOCKS`
 * (default 2,000 blocks of 200 transactions; quick: 40) change the runs.
 */
export const scaling: Bench = async ({ quick }) => {
  requireIndexer()
  const blocks = Number(process.env.BENCH_SCALING_BLOCKS ?? (quick ? 40 : 2_000))
  const workerCounts = (process.env.BENCH_SCALING_WORKERS ?? '1,2,4').split(',').map(Number)
  if (workerCounts.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`BENCH_SCALING_WORKERS: positive integers, got ${process.env.BENCH_SCALING_WORKERS}`)
  const served = await serveChain({ ...denseChainParams, blocks, txPerBlock: 200 })
  const attributionRows = served.chain.truth().attributionRows
  const runs: Array<{ workers: number; seconds: number; rowsPerSecond: number; txPerSecond: number; postgresUsPerRow: number; postgresCores: number }> = []
  try {
    await served.replay.setProfile(profileSpec('fast'))
    const truth = served.chain.truth()
    for (const workers of workerCounts) {
      const run = await runBackfill({
        label: `scaling-${workers}`,
        replay: served.replay,
        truth,
        settings: { pollIntervalMs: 100, extraWorkers: workers - 1 },
        timeoutMs: quick ? 120_000 : 900_000,
      })
      if (!run.verification.equal) throw new Error(`${workers} workers: totals DIFFERENT from the ground truth: ${run.verification.mismatches.join('; ')}`)
      const seconds = run.ms / 1000
      runs.push({
        workers,
        seconds,
        rowsPerSecond: attributionRows / seconds,
        txPerSecond: run.transactions / seconds,
        postgresUsPerRow: (run.cpu.postgres * 1e6) / attributionRows,
        postgresCores: run.cpu.postgres / run.cpu.windowSeconds,
      })
    }
  } finally {
    await served.close()
  }
  printTable(
    `scaling: the dense chain (${fmt(blocks)} blocks × 200 tx, ${fmt(attributionRows)} attribution rows) by worker processes, one PostgreSQL`,
    ['worker processes', 'seconds', 'tx/s', 'attributions/s', 'PostgreSQL µs per attribution', 'PostgreSQL cores busy', 'attributions/s one PostgreSQL core absorbs'],
    runs.map((r) => [String(r.workers), r.seconds.toFixed(1), fmt(r.txPerSecond), fmt(r.rowsPerSecond), r.postgresUsPerRow.toFixed(1), r.postgresCores.toFixed(2), fmt(1e6 / r.postgresUsPerRow)]),
  )
  return { params: { blocks, txPerBlock: 200, workerCounts, profile: 'fast' }, figures: { runs }, targets: [] }
}
