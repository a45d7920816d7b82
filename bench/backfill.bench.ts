import type { Bench } from './lib/bench.js'
import { measureFloor, type FloorResult } from './chain/floor.js'
import { serveChain } from './lib/chain-setup.js'
import { requireIndexer } from './lib/indexer.js'
import { runBackfill, type PipelineRun, type PipelineSettings } from './lib/pipeline-run.js'
import { fmt, printTable, ratio } from './lib/report.js'
import { median } from './lib/stats.js'

type Round = { floor: FloorResult; rpcClientFloor: FloorResult; pipeline: PipelineRun; ratio: number }

const MiB = 2 ** 20

export const backfill: Bench = async ({ quick, cpuProfileDir }) => {
  requireIndexer()
  const settings: PipelineSettings = { workerConcurrency: 4, rangeSize: 20, rpcBatchSize: 20, pollIntervalMs: 100 }
  const params = {
    blocks: quick ? 60 : 600,
    txPerBlock: 200,
    warmup: quick ? 0 : 1,
    reps: quick ? 1 : 3,
    ...settings,
  }
  const served = await serveChain({ blocks: params.blocks, txPerBlock: params.txPerBlock })
  const truth = served.chain.truth()
  const rounds: Round[] = []
  try {
    for (let round = 0; round < params.warmup + params.reps; round++) {
      const label = round < params.warmup ? `warm-up ${round + 1}` : `round ${round - params.warmup + 1}`
      const floor = async (client: 'fetch' | 'indexer-rpc' = 'fetch') => {
        await served.replay.release({ head: truth.lastBlock })
        return measureFloor({
          url: served.replay.url,
          from: 1,
          to: truth.lastBlock,
          rangeSize: settings.rangeSize,
          batchSize: settings.rpcBatchSize,
          concurrency: settings.workerConcurrency,
          client,
        })
      }
      const pipeline = () =>
        runBackfill({
          label: `backfill-${round}`,
          replay: served.replay,
          truth,
          settings,
          timeoutMs: quick ? 120_000 : 600_000,
          // profile one measured round only
          ...(cpuProfileDir && round === params.warmup && { cpuProfileDir }),
        })
      // alternate which runs first, so neither always gets the warmer page cache
      let floorResult: FloorResult
      let pipelineResult: PipelineRun
      if (round % 2 === 0) {
        floorResult = await floor()
        pipelineResult = await pipeline()
      } else {
        pipelineResult = await pipeline()
        floorResult = await floor()
      }
      const pipelineTxPerSecond = (pipelineResult.transactions / pipelineResult.ms) * 1000
      const floorTxPerSecond = (floorResult.transactions / floorResult.ms) * 1000
      process.stdout.write(
        `backfill ${label}: pipeline ${fmt(pipelineTxPerSecond)} tx/s in ${fmt(pipelineResult.ms / 1000, 2)} s ` +
          `(totals ${pipelineResult.verification.equal ? 'equal to' : 'DIFFERENT from'} ground truth), ` +
          `floor ${fmt(floorTxPerSecond)} tx/s, ratio ${ratio(pipelineTxPerSecond / floorTxPerSecond)}\n`,
      )
      // not a target: what the indexer's RPC client alone costs over the bare floor, to explain the gap
      const rpcClientFloor = await floor('indexer-rpc')
      if (round >= params.warmup) {
        rounds.push({ floor: floorResult, rpcClientFloor, pipeline: pipelineResult, ratio: pipelineTxPerSecond / floorTxPerSecond })
      }
    }
  } finally {
    await served.close()
  }

  const perSecond = (count: number, ms: number) => (count / ms) * 1000
  const pipelineTx = median(rounds.map((r) => perSecond(r.pipeline.transactions, r.pipeline.ms)))
  const pipelineBlocks = median(rounds.map((r) => perSecond(r.pipeline.blocks, r.pipeline.ms)))
  const floorTx = median(rounds.map((r) => perSecond(r.floor.transactions, r.floor.ms)))
  const floorBlocks = median(rounds.map((r) => perSecond(r.floor.blocks, r.floor.ms)))
  const medianRatio = median(rounds.map((r) => r.ratio))
  const rpcClientFloorTx = median(rounds.map((r) => perSecond(r.rpcClientFloor.transactions, r.rpcClientFloor.ms)))
  const rpcClientOverFloor = median(rounds.map((r) => r.rpcClientFloor.ms / r.floor.ms))
  const peakRss = Math.max(...rounds.map((r) => r.pipeline.peakRssBytes))
  const allEqual = rounds.every((r) => r.pipeline.verification.equal)

  printTable(
    `backfill: ${fmt(truth.transactions)} transactions in ${truth.lastBlock} blocks, median of ${params.reps} after ${params.warmup} warm-up`,
    ['variant', 'tx/s', 'blocks/s', 'seconds', 'peak RSS MiB'],
    [
      ['pipeline (follower + workers + Postgres)', fmt(pipelineTx), fmt(pipelineBlocks, 1), fmt(median(rounds.map((r) => r.pipeline.ms)) / 1000, 2), fmt(peakRss / MiB)],
      ['floor (same batched eth_getBlockByNumber, parse only)', fmt(floorTx), fmt(floorBlocks, 1), fmt(median(rounds.map((r) => r.floor.ms)) / 1000, 2), '-'],
      ['same calls through the indexer\'s RPC client (diagnostic)', fmt(rpcClientFloorTx), '', fmt(median(rounds.map((r) => r.rpcClientFloor.ms)) / 1000, 2), '-'],
      ['ratio pipeline / floor (median of per-round ratios)', ratio(medianRatio), '', '', ''],
      ['ratio indexer RPC client time / floor time', ratio(rpcClientOverFloor), '', '', ''],
    ],
  )
  const verification = rounds.at(-1)!.pipeline.verification
  process.stdout.write(
    `totals: ${allEqual ? 'equal to the ground truth in every round' : `DIFFERENT: ${verification.mismatches.join('; ')}`} ` +
      `(${verification.codes} codes, ${verification.attributionRows.index} attribution rows, suffix gas = ${verification.suffixGasDefinition})\n`,
  )
  const unsupported = rounds.at(-1)!.pipeline.rpc.unsupported
  if (Object.keys(unsupported).length > 0) process.stdout.write(`RPC methods the replay server does not serve: ${JSON.stringify(unsupported)}\n`)

  return {
    params,
    figures: {
      chain: { blocks: truth.lastBlock, transactions: truth.transactions, attributionRows: truth.attributionRows, bundles: truth.bundles },
      pipeline: { txPerSecond: pipelineTx, blocksPerSecond: pipelineBlocks, peakRssMiB: peakRss / MiB },
      floor: { txPerSecond: floorTx, blocksPerSecond: floorBlocks },
      indexerRpcClient: { txPerSecond: rpcClientFloorTx, timeOverFloor: rpcClientOverFloor },
      ratio: medianRatio,
      verified: allEqual,
      rounds: rounds.map((r) => ({
        pipelineMs: r.pipeline.ms,
        floorMs: r.floor.ms,
        indexerRpcClientMs: r.rpcClientFloor.ms,
        ratio: r.ratio,
        peakRssMiB: r.pipeline.peakRssBytes / MiB,
        verification: r.pipeline.verification,
        profileWindow: r.pipeline.profileWindow,
        rpc: r.pipeline.rpc,
      })),
    },
    targets: [
      { name: 'backfill vs floor', goal: '≥ 0.8× the floor', actual: ratio(medianRatio), met: medianRatio >= 0.8 },
      { name: 'backfill throughput', goal: '≥ 20,000 tx/s on this machine', actual: `${fmt(pipelineTx)} tx/s`, met: pipelineTx >= 20_000 },
      { name: 'backfill totals', goal: 'equal to ground truth', actual: allEqual ? 'equal' : 'different', met: allEqual },
    ],
  }
}
