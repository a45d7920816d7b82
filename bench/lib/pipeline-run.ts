import { setTimeout as sleep } from 'node:timers/promises'
import { createDatabase, closeDatabase } from '../../src/db/client.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { createRegistry } from '../../src/registry/register.js'
import type { ChainTruth } from '../chain/truth.js'
import type { ReplayProcess } from '../chain/replay-process.js'
import type { ReplayStats } from '../chain/replay-server.js'
import { FeatureMissing } from './bench.js'
import { createCpuMeter, type CpuSeconds } from './cpu.js'
import { BLOCK_CALL, readTransportState, settledPoint, type TransportState } from './daemon-metrics.js'
import { flushDirtyPages } from './process.js'
import {
  createBenchDatabase,
  createProgressReader,
  deleteRedisPrefix,
  startIndexerProcess,
  uniqueName,
  verifyAgainstTruth,
  type BenchDatabase,
  type IndexerProcess,
  type Verification,
} from './indexer.js'

/** Unset fields take the indexer's defaults (what an operator gets without tuning). */
export type PipelineSettings = {
  workerConcurrency?: number
  rangeSize?: number
  rpcBatchSize?: number
  pollIntervalMs: number
  env?: Record<string, string>
  /** Worker processes (`attribution worker`) beside the all-in-one indexer, on the same database and queue. */
  extraWorkers?: number
}

export type MemorySample = {
  atMs: number
  through: number
  rss: number
  /** V8 heap in use and memory outside the heap (Buffers), from the service's /metrics when it answers. */
  heapUsed?: number
  external?: number
}

/** Heap figures from prom-client's default metrics on the indexer's /metrics, or nothing if it does not answer in time. */
async function heapOf(url: string): Promise<Pick<MemorySample, 'heapUsed' | 'external'>> {
  try {
    const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(500) })
    if (!response.ok) return {}
    const text = await response.text()
    const value = (name: string) => {
      const match = new RegExp(`^${name} (\\d+(?:\\.\\d+)?(?:e\\+\\d+)?)`, 'm').exec(text)
      return match ? Number(match[1]) : undefined
    }
    const heapUsed = value('nodejs_heap_size_used_bytes')
    const external = value('nodejs_external_memory_bytes')
    return { ...(heapUsed !== undefined && { heapUsed }), ...(external !== undefined && { external }) }
  } catch {
    return {}
  }
}

/**
 * One indexer on a fresh database and queue prefix, ready to index: block 0
 * (the genesis, no transactions) already indexed, so that process start-up,
 * migrations and connections are behind it when the clock starts.
 */
export type ReadyIndexer = {
  db: BenchDatabase
  indexer: IndexerProcess
  prefix: string
  indexedThrough: () => Promise<number>
  dispose(): Promise<void>
}

/** Migrates the database and registers the wallets whose builder codes the chain uses. */
export async function registerWallets(url: string, truth: ChainTruth): Promise<void> {
  await migrateDatabase(url)
  const db = createDatabase({ url, poolSize: 2 })
  try {
    const registry = createRegistry({ db })
    for (const { wallet } of truth.registeredWallets) await registry.register(wallet)
  } finally {
    await closeDatabase(db)
  }
}

export async function startReadyIndexer(options: {
  label: string
  replay: ReplayProcess
  truth: ChainTruth
  settings: PipelineSettings
  cpuProfileDir?: string
  readyTimeoutMs?: number
}): Promise<ReadyIndexer> {
  const db = await createBenchDatabase(`bench_${options.label.replace(/\W/g, '_')}`)
  const prefix = uniqueName('bench')
  let indexer: IndexerProcess | undefined
  const workers: IndexerProcess[] = []
  const dispose = async () => {
    await Promise.all([indexer, ...workers].map((process) => process?.stop()))
    await db.drop().catch(() => {})
    await deleteRedisPrefix(prefix).catch(() => {})
  }
  try {
    // registered builder codes in the registry, so the resolver sees both kinds
    await registerWallets(db.url, options.truth)
    indexer = await startIndexerProcess({
      rpcUrl: options.replay.url,
      chainId: options.truth.chainId,
      databaseUrl: db.url,
      queuePrefix: prefix,
      ...options.settings,
      label: options.label,
      ...(options.cpuProfileDir && { cpuProfileDir: options.cpuProfileDir }),
    })
    for (let i = 0; i < (options.settings.extraWorkers ?? 0); i++) {
      workers.push(
        await startIndexerProcess({
          rpcUrl: options.replay.url,
          chainId: options.truth.chainId,
          databaseUrl: db.url,
          queuePrefix: prefix,
          ...options.settings,
          label: `${options.label}-worker-${i + 1}`,
          command: 'worker',
        }),
      )
    }
    const indexedThrough = createProgressReader(db.sql, options.truth.chainId)
    const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000)
    while ((await indexedThrough()) < 0) {
      if (indexer.exited()) throw new Error(`the indexer exited during start-up:\n${indexer.tail()}`)
      if (Date.now() > deadline) {
        const stats = await options.replay.stats()
        throw stats.requests === 0
          ? new FeatureMissing('the indexer started but never called the RPC node (follower/worker roles not wired to RPC_URL?)')
          : new Error(`the indexer did not index the genesis block within ${options.readyTimeoutMs ?? 60_000} ms:\n${indexer.tail()}`)
      }
      await sleep(50)
    }
    return { db, indexer, prefix, indexedThrough, dispose }
  } catch (error) {
    await dispose()
    throw error
  }
}

export type PipelineRun = {
  ms: number
  blocks: number
  transactions: number
  peakRssBytes: number
  samples: MemorySample[]
  verification: Verification
  /** Monotonic-clock window (µs) from release to completion, to cut the indexer's CPU profile (bench/profile-top.ts). */
  profileWindow: string
  rpc: Pick<ReplayStats, 'calls' | 'unsupported' | 'requests' | 'batches' | 'fullBlocksServed' | 'headerBlocksServed' | 'refused' | 'maxInFlight' | 'shapes' | 'arrivedWithHeld'>
  /** Where the adaptive transport settled (the second half of the run's samples), and its state at the end. */
  transport: ReturnType<typeof settledPoint> & { end: TransportState | undefined }
  /** CPU seconds over the measured window, per process. */
  cpu: CpuSeconds
  /** What the node spent on the run: its process's CPU, and the busy time of a modelled node's thread (node-profiles.ts). */
  nodeCost: { processCpuSeconds: number; modelledBusySeconds: number }
}

/**
 * How long to wait before the next progress poll: a quarter of the time the
 * blocks left should take at the pace so far, between 10 and 250 ms. Each
 * poll costs the bench and PostgreSQL CPU on cores the pipeline needs (the
 * floor is not polled): a poll every 25 ms cost ~4% of the machine over an
 * everyday backfill. Polled near the end as often as before, the measured
 * end is as close to the true one.
 */
export function nextPollMs(through: number, last: number, elapsedMs: number): number {
  if (through <= 0) return 100
  const leftMs = ((last - through) / through) * elapsedMs
  return Math.min(250, Math.max(10, leftMs / 4))
}

/**
 * Times a backfill of blocks 1..last: from the indexer's first request for
 * a block above 0 (replay server clock) to the moment the `ranges` table
 * shows every block done (polled: nextPollMs), then checks the totals.
 */
export async function runBackfill(options: {
  label: string
  replay: ReplayProcess
  truth: ChainTruth
  settings: PipelineSettings
  cpuProfileDir?: string
  timeoutMs: number
  sampleEveryMs?: number
  onSample?: (sample: MemorySample) => void
}): Promise<PipelineRun> {
  await options.replay.release({ head: 0 })
  const ready = await startReadyIndexer(options)
  try {
    const last = options.truth.lastBlock
    flushDirtyPages()
    const cpu = createCpuMeter({ daemonPid: ready.indexer.pid, nodePid: options.replay.pid, sql: ready.db.sql, databaseName: ready.db.name })
    await options.replay.resetStats()
    await cpu.start()
    const transportSamples: TransportState[] = []
    const pendingSamples: Array<Promise<unknown>> = []
    let nextTransportSampleAt = Date.now()
    const releasedAt = Date.now()
    const releasedAtUs = process.hrtime.bigint() / 1000n
    await options.replay.release({ head: last })
    const samples: MemorySample[] = []
    const pendingHeaps: Array<Promise<unknown>> = []
    let nextSampleAt = releasedAt
    let through = 0
    let doneAt = 0
    for (;;) {
      through = await ready.indexedThrough()
      const now = Date.now()
      // sample on schedule, and once more at completion so the last sample is the end state
      if (options.sampleEveryMs && (now >= nextSampleAt || through >= last)) {
        const memory = ready.indexer.memory()
        if (memory) {
          const sample: MemorySample = { atMs: now - releasedAt, through, rss: memory.rss }
          // not awaited: a busy indexer answers /metrics late, and the completion poll must not wait for it
          pendingHeaps.push(heapOf(ready.indexer.url).then((heap) => Object.assign(sample, heap)))
          samples.push(sample)
          options.onSample?.(sample)
        }
        nextSampleAt += options.sampleEveryMs
      }
      if (through >= last) {
        doneAt = now
        break
      }
      if (now >= nextTransportSampleAt) {
        // once a second: where the transport is, and the CPU of backends that may not live to the end
        // not awaited, like the heap: the completion poll must not wait for a busy indexer's /metrics
        nextTransportSampleAt = now + 1_000
        pendingSamples.push(
          readTransportState(ready.indexer.url).then((state) => state && transportSamples.push(state)),
          cpu.sample().catch(() => {}),
        )
      }
      if (ready.indexer.exited()) throw new Error(`the indexer exited during the backfill at block ${through}:\n${ready.indexer.tail()}`)
      if (now - releasedAt > options.timeoutMs) {
        throw new Error(`backfill timed out after ${options.timeoutMs} ms at block ${through} of ${last}:\n${ready.indexer.tail()}`)
      }
      await sleep(nextPollMs(through, last, now - releasedAt))
    }
    const cpuSeconds = await cpu.stop()
    const stats = await options.replay.stats()
    await Promise.all([...pendingHeaps, ...pendingSamples])
    const end = await readTransportState(ready.indexer.url, 5_000)
    // where the transport settled is part of every report: a renamed gauge must fail the bench, not print '?'
    // (with worker processes beside it, the all-in-one process may have fetched no block: nothing to say)
    if (!options.settings.extraWorkers && (end?.batchSizes[BLOCK_CALL] === undefined || end.concurrencyLimit === undefined)) {
      throw new FeatureMissing(
        `the indexer's /metrics shows no indexer_rpc_batch_size{call="${BLOCK_CALL}"} or indexer_rpc_concurrency_limit: ` +
          'the bench cannot say where the transport settled (bench/lib/daemon-metrics.ts reads them)',
      )
    }
    const profileWindow = `${releasedAtUs}:${process.hrtime.bigint() / 1000n}`
    const startedAt = stats.firstBlockRequestAt ?? releasedAt
    const memory = ready.indexer.memory()
    const verification = await verifyAgainstTruth(ready.db.sql, options.truth)
    return {
      ms: doneAt - startedAt,
      blocks: last,
      transactions: options.truth.transactions,
      peakRssBytes: memory?.peak ?? Number.NaN,
      samples,
      verification,
      profileWindow,
      rpc: {
        calls: stats.calls,
        unsupported: stats.unsupported,
        requests: stats.requests,
        batches: stats.batches,
        fullBlocksServed: stats.fullBlocksServed,
        headerBlocksServed: stats.headerBlocksServed,
        refused: stats.refused,
        maxInFlight: stats.maxInFlight,
        shapes: stats.shapes,
        arrivedWithHeld: stats.arrivedWithHeld,
      },
      transport: { ...settledPoint(end ? [...transportSamples, end] : transportSamples), end },
      cpu: cpuSeconds,
      nodeCost: { processCpuSeconds: stats.processCpuMs / 1000, modelledBusySeconds: stats.modelledBusyMs / 1000 },
    }
  } finally {
    await ready.dispose()
  }
}
