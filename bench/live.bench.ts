import { setTimeout as sleep } from 'node:timers/promises'
import type { Bench } from './lib/bench.js'
import { serveChain } from './lib/chain-setup.js'
import { createCpuMeter, type CpuSeconds } from './lib/cpu.js'
import { requireIndexer } from './lib/indexer.js'
import { readLiveStages, type StageQuantiles } from './lib/live-stages.js'
import { startReadyIndexer, type PipelineSettings } from './lib/pipeline-run.js'
import { fmt, printTable } from './lib/report.js'
import { percentile } from './lib/stats.js'

/**
 * Blocks released at a steady rate (50 blocks/s × 200 transactions, issue
 * 40.3): how long after the node has a block it is visible in the index.
 *
 * Two modes, each on the indexer's defaults otherwise (as a user runs it):
 * - `pushed`: WS_URL set, the node pushes each new head (replay-ws.ts);
 * - `polled`: no WebSocket, POLL_INTERVAL_MS=100.
 * BENCH_LIVE_MODES picks them (comma-separated, both by default),
 * BENCH_LIVE_RATE the blocks a second, BENCH_LIVE_SECONDS the run's length.
 *
 * A block is visible once `ranges` shows it and every block below done
 * (polled every ~5 ms): the commit flips its range in the same transaction
 * as its rows and totals, and the API reads those rows uncached
 * (/v1/indexer/status, the analytics' first read), so that moment is the
 * API's. The stages of a live block's way are read from the daemon's
 * `indexer_live_stage_seconds` histogram after the run.
 */
type Mode = 'pushed' | 'polled'
const MODES: readonly Mode[] = ['pushed', 'polled']

const GOALS: Record<Mode, number> = { pushed: 100, polled: 150 }

function modesFromEnv(): Mode[] {
  const raw = process.env.BENCH_LIVE_MODES
  if (!raw) return [...MODES]
  const modes = raw.split(',').map((mode) => mode.trim())
  for (const mode of modes) if (!(MODES as readonly string[]).includes(mode)) throw new Error(`BENCH_LIVE_MODES: ${mode} is not one of ${MODES.join(', ')}`)
  return modes as Mode[]
}

type ModeResult = {
  mode: Mode
  blocksMeasured: number
  lagMs: { p50: number; p90: number; p99: number; max: number }
  behindBlocks: { p50: number; p99: number; max: number }
  stages: StageQuantiles[]
  /** CPU over the released blocks, per process (the machine is shared: ms per block say more than the lag under load). */
  cpu: CpuSeconds | undefined
}

async function runMode(mode: Mode, params: { blocks: number; txPerBlock: number; rate: number; initialHead: number; progressPollMs: number }, cpuProfileDir?: string): Promise<ModeResult> {
  const served = await serveChain({ blocks: params.blocks, txPerBlock: params.txPerBlock }, { head: params.initialHead })
  const truth = served.chain.truth()
  const settings: PipelineSettings =
    mode === 'pushed' ? { pollIntervalMs: 1_000, env: { WS_URL: served.replay.url.replace(/^http/, 'ws') } } : { pollIntervalMs: 100 }
  const ready = await startReadyIndexer({ label: `live-${mode}`, replay: served.replay, truth, settings, ...(cpuProfileDir && { cpuProfileDir }) }).catch(async (error) => {
    await served.close()
    throw error
  })
  const lagMs: number[] = []
  const behind: number[] = []
  let stages: StageQuantiles[] = []
  let cpu: CpuSeconds | undefined
  try {
    // the blocks released before streaming starts are a plain backfill, not measured
    while ((await ready.indexedThrough()) < params.initialHead) await sleep(20)
    // what the backfill put in the stage histograms is left out: the run's figures are the difference
    const before = (await readLiveStages(ready.indexer.url)).snapshot
    const meter = createCpuMeter({ daemonPid: ready.indexer.pid, nodePid: served.replay.pid, sql: ready.db.sql, databaseName: ready.db.name })
    await meter.start()
    const release = await served.replay.release({ head: params.initialHead, rate: params.rate })
    const msPerBlock = 1000 / params.rate
    const releaseAt = (block: number) => release.baseAt + (block - params.initialHead) * msPerBlock
    const lastReleaseAt = releaseAt(truth.lastBlock)
    let through = params.initialHead
    while (through < truth.lastBlock) {
      const now = Date.now()
      const next = await ready.indexedThrough()
      const observedAt = Date.now()
      for (let block = through + 1; block <= next; block++) lagMs.push(observedAt - releaseAt(block))
      through = next
      const head = Math.min(truth.lastBlock, params.initialHead + Math.floor((now - release.baseAt) / msPerBlock))
      behind.push(Math.max(0, head - through))
      if (ready.indexer.exited()) throw new Error(`the indexer exited while following:\n${ready.indexer.tail()}`)
      if (now > lastReleaseAt + 30_000) throw new Error(`the index was still at block ${through} of ${truth.lastBlock} 30 s after the last block`)
      await sleep(params.progressPollMs)
    }
    cpu = await meter.stop()
    stages = (await readLiveStages(ready.indexer.url, before)).quantiles
  } finally {
    await ready.dispose()
    await served.close()
  }
  return {
    mode,
    blocksMeasured: lagMs.length,
    lagMs: { p50: percentile(lagMs, 50), p90: percentile(lagMs, 90), p99: percentile(lagMs, 99), max: Math.max(...lagMs) },
    behindBlocks: { p50: percentile(behind, 50), p99: percentile(behind, 99), max: Math.max(...behind) },
    stages,
    cpu,
  }
}

export const live: Bench = async ({ quick, cpuProfileDir }) => {
  requireIndexer()
  const rate = Number(process.env.BENCH_LIVE_RATE ?? 50)
  const seconds = Number(process.env.BENCH_LIVE_SECONDS ?? (quick ? 6 : 30))
  const initialHead = 20
  const params = { blocks: initialHead + Math.round(rate * seconds), txPerBlock: 200, rate, initialHead, progressPollMs: 5 }
  const results: ModeResult[] = []
  for (const mode of modesFromEnv()) results.push(await runMode(mode, params, cpuProfileDir))

  printTable(
    `live: blocks released at ${rate} blocks/s × ${params.txPerBlock} transactions for ${seconds} s, release → visible in the index`,
    ['mode', 'blocks', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'behind p99 (blocks)'],
    results.map((r) => [r.mode, String(r.blocksMeasured), fmt(r.lagMs.p50, 0), fmt(r.lagMs.p90, 0), fmt(r.lagMs.p99, 0), fmt(r.lagMs.max, 0), fmt(r.behindBlocks.p99, 0)]),
  )
  const perBlock = (seconds: number | undefined, r: ModeResult) => (seconds === undefined ? '?' : fmt((seconds * 1000) / r.blocksMeasured, 2))
  printTable(
    'live: CPU per block released (ms), over the run',
    ['mode', 'daemon', 'daemon main thread', 'main thread waited for a core', 'postgres', 'node', 'bench'],
    results.map((r) => [r.mode, perBlock(r.cpu?.daemon, r), perBlock(r.cpu?.daemonMainThread, r), perBlock(r.cpu?.daemonMainThreadWaited, r), perBlock(r.cpu?.postgres, r), perBlock(r.cpu?.node, r), perBlock(r.cpu?.bench, r)]),
  )
  for (const r of results) {
    if (r.stages.length === 0) continue
    printTable(
      `live ${r.mode}: each stage of a block's way (indexer_live_stage_seconds, ranges at the head; quantiles within histogram buckets)`,
      ['stage', 'count', 'mean ms', 'p50 ms', 'p90 ms', 'p99 ms'],
      r.stages.map((s) => [s.stage, String(s.count), fmt(s.meanMs, 1), fmt(s.p50Ms, 1), fmt(s.p90Ms, 1), fmt(s.p99Ms, 1)]),
    )
  }
  return {
    params,
    figures: Object.fromEntries(results.map((r) => [r.mode, r])),
    targets: results.map((r) => ({
      name: `live p99, ${r.mode}`,
      goal: `p99 ≤ ${GOALS[r.mode]} ms at ${rate} blocks/s × ${params.txPerBlock} tx`,
      actual: `${fmt(r.lagMs.p99, 0)} ms`,
      met: r.lagMs.p99 <= GOALS[r.mode],
    })),
  }
}
