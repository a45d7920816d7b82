import type { Bench } from './lib/bench.js'
import { measureFloor, sweepFloor, type FloorResult } from './chain/floor.js'
import { serveChain } from './lib/chain-setup.js'
import { requireIndexer } from './lib/indexer.js'
import { runBackfill, type PipelineRun, type PipelineSettings } from './lib/pipeline-run.js'
import { fmt, printTable, ratio } from './lib/report.js'
import { median } from './lib/stats.js'

/**
 * Backfill throughput of the indexer on its DEFAULT settings (nothing tuned:
 * the adaptive transport must find the operating point itself) against the
 * floor measured in the same run: the fastest plain client (the indexer's raw
 * HTTP client + JSON.parse, at the best batch size and concurrency of a
 * sweep) fetching the same blocks. The replay node holds its head at 0 while
 * the indexer starts; the clock starts at its first request for a block
 * above 0 once the head is released. Two chains: the everyday one (200-tx
 * blocks, ≥ 1M transactions in the full run) and a Base-sized one (600-tx,
 * ~1.1 MB blocks), where the point is the batch size the transport settles on.
 */
type Round = { floor: FloorResult; rpcClient: FloorResult; pipeline: PipelineRun; ratio: number }

const MiB = 2 ** 20
const perSecond = (count: number, ms: number) => (count / ms) * 1000
const defaults: PipelineSettings = { pollIntervalMs: 100 }

async function measureChain(options: { label: string; blocks: number; txPerBlock: number; reps: number; sampleBlocks: number; quick: boolean; cpuProfileDir?: string | undefined }) {
  const served = await serveChain({ blocks: options.blocks, txPerBlock: options.txPerBlock })
  const truth = served.chain.truth()
  const rounds: Round[] = []
  try {
    await served.replay.release({ head: truth.lastBlock })
    // quick (CI) proves the bench runs: a smaller sweep and one round
    const sweep = await sweepFloor({
      url: served.replay.url,
      from: 1,
      sampleBlocks: options.sampleBlocks,
      batchSizes: options.quick ? [10, 50] : [5, 10, 20, 50],
      concurrencies: options.quick ? [4] : [2, 4, 8],
    })
    process.stdout.write(
      `${options.label}: plain client sweep over ${options.sampleBlocks} blocks: ` +
        `${sweep.points.map((p) => `b${p.batchSize}×c${p.concurrency} ${fmt(p.txPerSecond)}`).join(', ')} tx/s; ` +
        `floor at batch ${sweep.batchSize}, ${sweep.concurrency} in flight\n`,
    )
    const floor = async (client: 'raw' | 'indexer-rpc') => {
      await served.replay.release({ head: truth.lastBlock })
      return measureFloor({ url: served.replay.url, from: 1, to: truth.lastBlock, batchSize: sweep.batchSize, concurrency: sweep.concurrency, client })
    }
    for (let round = 0; round < options.reps; round++) {
      const pipeline = () =>
        runBackfill({
          label: `${options.label}-${round}`,
          replay: served.replay,
          truth,
          settings: defaults,
          timeoutMs: options.quick ? 120_000 : 900_000,
          ...(options.cpuProfileDir && round === 0 && { cpuProfileDir: options.cpuProfileDir }),
        })
      // alternate which runs first, so neither always gets the warmer page cache
      const [floorResult, pipelineResult] = round % 2 === 0 ? [await floor('raw'), await pipeline()] : await pipeline().then(async (p) => [await floor('raw'), p] as const)
      const pipelineTx = perSecond(pipelineResult.transactions, pipelineResult.ms)
      const floorTx = perSecond(floorResult.transactions, floorResult.ms)
      process.stdout.write(
        `${options.label} round ${round + 1}: pipeline ${fmt(pipelineTx)} tx/s in ${fmt(pipelineResult.ms / 1000, 2)} s ` +
          `(totals ${pipelineResult.verification.equal ? 'equal to' : 'DIFFERENT from'} ground truth; block batches settled at ` +
          `${pipelineResult.transport.blockBatchSize ?? '?'}, ${pipelineResult.transport.concurrencyLimit ?? '?'} in flight), ` +
          `floor ${fmt(floorTx)} tx/s, ratio ${ratio(pipelineTx / floorTx)}\n`,
      )
      rounds.push({ floor: floorResult, rpcClient: await floor('indexer-rpc'), pipeline: pipelineResult, ratio: pipelineTx / floorTx })
    }
  } finally {
    await served.close()
  }
  const pipelineTx = median(rounds.map((r) => perSecond(r.pipeline.transactions, r.pipeline.ms)))
  const floorTx = median(rounds.map((r) => perSecond(r.floor.transactions, r.floor.ms)))
  const rpcClientTx = median(rounds.map((r) => perSecond(r.rpcClient.transactions, r.rpcClient.ms)))
  const medianRatio = median(rounds.map((r) => r.ratio))
  const settledBatch = median(rounds.map((r) => r.pipeline.transport.blockBatchSize ?? Number.NaN))
  const peakRss = Math.max(...rounds.map((r) => r.pipeline.peakRssBytes))
  const allEqual = rounds.every((r) => r.pipeline.verification.equal)
  const blockMiB = served.chain.meta.fullBytes / truth.lastBlock / MiB
  printTable(
    `${options.label}: ${fmt(truth.transactions)} transactions in ${truth.lastBlock} blocks of ${options.txPerBlock} (${blockMiB.toFixed(2)} MiB each), median of ${options.reps}`,
    ['variant', 'tx/s', 'seconds', 'notes'],
    [
      ['pipeline on defaults (follower + workers + Postgres)', fmt(pipelineTx), fmt(median(rounds.map((r) => r.pipeline.ms)) / 1000, 2), `block batches settled at ${settledBatch}, peak RSS ${fmt(peakRss / MiB)} MiB`],
      ['floor: raw HTTP client + JSON.parse at its best point', fmt(floorTx), fmt(median(rounds.map((r) => r.floor.ms)) / 1000, 2), `batch ${rounds[0]!.floor.batchSize}, ${rounds[0]!.floor.concurrency} in flight`],
      ["same blocks through the indexer's RPC client (diagnostic)", fmt(rpcClientTx), fmt(median(rounds.map((r) => r.rpcClient.ms)) / 1000, 2), 'adaptive transport + scanner, no queue or database'],
      ['ratio pipeline / floor (median of per-round ratios)', ratio(medianRatio), '', rounds.map((r) => ratio(r.ratio)).join(' ')],
    ],
  )
  // a backfill that indexes wrong totals is broken, whatever its speed: the bench fails
  if (!allEqual) throw new Error(`${options.label}: totals DIFFERENT from the ground truth: ${rounds.find((r) => !r.pipeline.verification.equal)!.pipeline.verification.mismatches.join('; ')}`)
  return {
    summary: {
      blocks: truth.lastBlock,
      transactions: truth.transactions,
      blockMiB,
      pipelineTxPerSecond: pipelineTx,
      floorTxPerSecond: floorTx,
      indexerRpcClientTxPerSecond: rpcClientTx,
      ratio: medianRatio,
      settledBlockBatch: settledBatch,
      peakRssMiB: peakRss / MiB,
      verified: allEqual,
      rounds: rounds.map((r) => ({ pipelineMs: r.pipeline.ms, floorMs: r.floor.ms, rpcClientMs: r.rpcClient.ms, ratio: r.ratio, transport: r.pipeline.transport, rpc: r.pipeline.rpc })),
    },
    medianRatio,
    pipelineTx,
    allEqual,
    settledBatch,
  }
}

export const backfill: Bench = async ({ quick, cpuProfileDir }) => {
  requireIndexer()
  const reps = quick ? 1 : 3
  const params = {
    everyday: { blocks: quick ? 60 : 5_000, txPerBlock: 200, sampleBlocks: quick ? 30 : 500 },
    baseSized: { blocks: quick ? 12 : 600, txPerBlock: 600, sampleBlocks: quick ? 12 : 150 },
    reps,
    settings: 'indexer defaults (POLL_INTERVAL_MS=100)',
  }
  const everyday = await measureChain({ label: 'backfill', ...params.everyday, reps, quick, cpuProfileDir })
  const base = await measureChain({ label: 'backfill-base-sized', ...params.baseSized, reps, quick })
  return {
    params,
    figures: { everyday: everyday.summary, baseSized: base.summary },
    targets: [
      { name: 'backfill vs floor on defaults', goal: '≥ 0.9× the fastest plain client', actual: ratio(everyday.medianRatio), met: everyday.medianRatio >= 0.9 },
      { name: 'Base-sized backfill vs floor on defaults', goal: '≥ 0.9× the fastest plain client', actual: `${ratio(base.medianRatio)} (batch ${base.settledBatch})`, met: base.medianRatio >= 0.9 },
      { name: 'backfill totals', goal: 'equal to ground truth', actual: everyday.allEqual && base.allEqual ? 'equal' : 'different', met: everyday.allEqual && base.allEqual },
    ],
  }
}
