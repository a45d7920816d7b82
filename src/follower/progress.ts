import type postgres from 'postgres'
import type { Logger } from '../logger.js'
import type { IndexerMetrics } from '../metrics/indexer.js'
import { indexedThrough } from './ranges.js'

const REPORT_INTERVAL_MS = 10_000

/**
 * Backfill progress in the logs: blocks/s and transactions/s indexed since
 * the last report, blocks remaining and an ETA. Quiet once caught up.
 */
export function createProgressReporter({
  chainId,
  logger,
  metrics,
  liveWindow,
}: {
  chainId: number
  logger: Logger
  metrics?: IndexerMetrics
  /** Within this many blocks of the target the follower is following the head, not backfilling. */
  liveWindow: number
}) {
  let last = { at: Date.now(), through: undefined as number | undefined }
  let lastReportAt = 0

  async function report(sql: postgres.ReservedSql, target: number) {
    const now = Date.now()
    const through = await indexedThrough(sql, chainId)
    if (through !== undefined) metrics?.indexed(chainId, through, target)
    if (now - lastReportAt < REPORT_INTERVAL_MS) return
    const since = new Date(last.at).toISOString()
    const [row] = await sql<{ blocks: string | null; txs: string | null }[]>`
      select sum(to_block - from_block + 1) as blocks, sum(tx_count) as txs
      from ranges where chain_id = ${chainId} and status = 'done' and done_at > ${since}::timestamptz`
    const seconds = (now - last.at) / 1000
    const blocks = Number(row?.blocks ?? 0)
    const remaining = through === undefined ? undefined : Math.max(0, target - through)
    last = { at: now, through }
    lastReportAt = now
    if (blocks === 0 && !remaining) return
    const blocksPerSecond = blocks / seconds
    const backfilling = remaining !== undefined && remaining > liveWindow
    logger[backfilling ? 'info' : 'debug'](
      {
        indexed_through: through,
        target,
        blocks_per_s: Number(blocksPerSecond.toFixed(1)),
        tx_per_s: Math.round(Number(row?.txs ?? 0) / seconds),
        blocks_remaining: remaining,
        eta_s: remaining && blocksPerSecond > 0 ? Math.round(remaining / blocksPerSecond) : undefined,
      },
      backfilling ? 'backfilling' : 'following the head',
    )
  }

  return { report }
}
