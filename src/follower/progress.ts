import type postgres from 'postgres'
import type { Logger } from '../logger.js'
import type { IndexerMetrics } from '../metrics/indexer.js'
import { doneSince, indexedThrough } from '../store/ranges.js'

const REPORT_INTERVAL_MS = 10_000

/** Where a chain's RPC endpoint runs, as the fetching processes last published it (rpc/endpoints/endpoint-pool.ts EndpointState fits). */
export type EndpointPoint = { url: string; state: string; itemsPerSecond: number | null; concurrency: number | null; blockBatchSize: number | null }

/** The progress line's `rpc` field: per endpoint, its health, the transport's operating point and the items it delivers per busy second. */
const rpcField = (endpoints: readonly EndpointPoint[]) =>
  endpoints.map((endpoint) => ({
    url: endpoint.url,
    state: endpoint.state,
    batch: endpoint.blockBatchSize,
    in_flight: endpoint.concurrency,
    items_per_s: endpoint.itemsPerSecond === null ? null : Math.round(endpoint.itemsPerSecond),
  }))

const perSecond = (count: number, seconds: number) => (seconds > 0 ? Number((count / seconds).toFixed(1)) : 0)

/**
 * Backfill progress: while the index is more than `liveWindow` blocks behind
 * its target, one line every 10 s with blocks/s, transactions/s and
 * attributions/s over those 10 s, blocks left and an ETA (also as gauges);
 * with each RPC endpoint's operating point and throughput (`rpc`);
 * once within the window, one "caught up with the head" line with the
 * backfill's totals. Quiet while following the head.
 */
export function createProgressReporter({
  chainId,
  startBlock,
  logger,
  metrics,
  liveWindow,
  endpoints = async () => [],
}: {
  chainId: number
  startBlock: number
  logger: Logger
  metrics?: IndexerMetrics
  /** The chain's endpoints where the fetching happens (the workers may be other processes); a failed read leaves the field out. */
  endpoints?: () => Promise<readonly EndpointPoint[]>
  /** Within this many blocks of the target the follower is following the head, not backfilling. */
  liveWindow: number
}) {
  let backfill: { startedAt: number; from: number } | undefined
  let lastReportAt = 0

  async function report(sql: postgres.ReservedSql, target: number) {
    const now = Date.now()
    const through = (await indexedThrough(sql, chainId)) ?? startBlock - 1
    metrics?.indexed(chainId, through, target)
    const remaining = Math.max(0, target - through)

    if (!backfill) {
      if (remaining <= liveWindow) return
      backfill = { startedAt: now, from: through + 1 }
      lastReportAt = now
      metrics?.backfill(chainId, { blocksPerSecond: 0, transactionsPerSecond: 0, attributionsPerSecond: 0, blocksRemaining: remaining, etaSeconds: undefined })
      logger.info({ indexed_through: through, target, blocks_remaining: remaining }, 'backfilling')
      return
    }

    if (remaining <= liveWindow) {
      const done = await doneSince(sql, chainId, backfill.startedAt - 1)
      const seconds = (now - backfill.startedAt) / 1000
      metrics?.backfill(chainId, { blocksPerSecond: 0, transactionsPerSecond: 0, attributionsPerSecond: 0, blocksRemaining: remaining, etaSeconds: 0 })
      logger.info(
        {
          indexed_through: through,
          target,
          blocks: done.blocks,
          transactions: done.transactions,
          attributions: done.attributions,
          seconds: Number(seconds.toFixed(1)),
          blocks_per_s: perSecond(done.blocks, seconds),
          tx_per_s: perSecond(done.transactions, seconds),
        },
        'caught up with the head',
      )
      backfill = undefined
      return
    }

    if (now - lastReportAt < REPORT_INTERVAL_MS) return
    const done = await doneSince(sql, chainId, lastReportAt)
    const seconds = (now - lastReportAt) / 1000
    lastReportAt = now
    const rates = {
      blocksPerSecond: perSecond(done.blocks, seconds),
      transactionsPerSecond: perSecond(done.transactions, seconds),
      attributionsPerSecond: perSecond(done.attributions, seconds),
    }
    const etaSeconds = rates.blocksPerSecond > 0 ? Math.round(remaining / rates.blocksPerSecond) : undefined
    metrics?.backfill(chainId, { ...rates, blocksRemaining: remaining, etaSeconds })
    const rpc = await endpoints().then(rpcField, () => undefined)
    logger.info(
      {
        indexed_through: through,
        target,
        blocks_per_s: rates.blocksPerSecond,
        tx_per_s: rates.transactionsPerSecond,
        attributions_per_s: rates.attributionsPerSecond,
        blocks_remaining: remaining,
        eta_s: etaSeconds ?? null,
        ...(rpc && rpc.length > 0 && { rpc }),
      },
      'backfilling',
    )
  }

  return { report }
}
