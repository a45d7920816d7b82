import { setTimeout as sleep } from 'node:timers/promises'
import type { Bench } from './lib/bench.js'
import { serveChain } from './lib/chain-setup.js'
import { requireIndexer } from './lib/indexer.js'
import { startReadyIndexer, type PipelineSettings } from './lib/pipeline-run.js'
import { fmt, printTable } from './lib/report.js'
import { percentile } from './lib/stats.js'

/**
 * Blocks released at a steady rate (10 blocks/s × 200 transactions): how far
 * behind the head the index is when each block becomes indexed.
 */
export const live: Bench = async ({ quick, cpuProfileDir }) => {
  requireIndexer()
  // poll well under the 100 ms block time, as an operator would for such a chain
  const settings: PipelineSettings = { workerConcurrency: 4, rangeSize: 20, rpcBatchSize: 20, pollIntervalMs: 20 }
  const params = { blocks: quick ? 60 : 600, txPerBlock: 200, rate: 10, initialHead: quick ? 10 : 20, progressPollMs: 10, ...settings }
  const served = await serveChain({ blocks: params.blocks, txPerBlock: params.txPerBlock }, { head: params.initialHead })
  const truth = served.chain.truth()
  const ready = await startReadyIndexer({
    label: 'live',
    replay: served.replay,
    truth,
    settings,
    ...(cpuProfileDir && { cpuProfileDir }),
  }).catch(async (error) => {
    await served.close()
    throw error
  })
  const lagMs: number[] = []
  const behindSamples: number[] = []
  try {
    // the blocks released before streaming starts are a plain backfill, not measured
    while ((await ready.indexedThrough()) < params.initialHead) await sleep(20)
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
      behindSamples.push(Math.max(0, head - through))
      if (ready.indexer.exited()) throw new Error(`the indexer exited while following:\n${ready.indexer.tail()}`)
      if (now > lastReleaseAt + 30_000) throw new Error(`the index was still at block ${through} of ${truth.lastBlock} 30 s after the last block`)
      await sleep(params.progressPollMs)
    }
  } finally {
    await ready.dispose()
    await served.close()
  }

  const lagBlocks = lagMs.map((ms) => ms / (1000 / params.rate))
  const row = (label: string, values: number[], digits: number) => [
    label,
    fmt(percentile(values, 50), digits),
    fmt(percentile(values, 90), digits),
    fmt(percentile(values, 99), digits),
    fmt(Math.max(...values), digits),
  ]
  printTable(
    `live: ${lagMs.length} blocks released at ${params.rate} blocks/s × ${params.txPerBlock} transactions (poll ${settings.pollIntervalMs} ms)`,
    ['lag', 'p50', 'p90', 'p99', 'max'],
    [
      row('release → indexed, in blocks', lagBlocks, 2),
      row('release → indexed, in ms', lagMs, 0),
      row(`head − indexed, sampled every ~${params.progressPollMs} ms, in blocks`, behindSamples, 0),
    ],
  )
  const p99 = percentile(lagBlocks, 99)
  return {
    params,
    figures: {
      blocksMeasured: lagMs.length,
      lagBlocks: { p50: percentile(lagBlocks, 50), p90: percentile(lagBlocks, 90), p99, max: Math.max(...lagBlocks) },
      lagMs: { p50: percentile(lagMs, 50), p90: percentile(lagMs, 90), p99: percentile(lagMs, 99), max: Math.max(...lagMs) },
      behindSampled: { p50: percentile(behindSamples, 50), p99: percentile(behindSamples, 99), max: Math.max(...behindSamples) },
    },
    targets: [{ name: 'live lag', goal: 'p99 < 2 blocks at 10 blocks/s × 200 tx', actual: `${fmt(p99, 2)} blocks`, met: p99 < 2 }],
  }
}
