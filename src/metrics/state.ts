import { Gauge, type Registry } from 'prom-client'
import type { Queue } from 'bullmq'
import type { Database } from '../db/client.js'
import { chainsProgress, stuckRangeCounts } from '../store/ranges.js'

/** The range queue, as the gauges read it (a BullMQ Queue fits). */
type JobCounter = Pick<Queue, 'getJobCounts'>

type ChainState = { chainId: string; head: number; indexed: number | undefined }

/**
 * Chain-wide indexing state read at scrape time from Postgres (head,
 * contiguous indexed block, lag per chain) and Redis (queue depths), so the
 * numbers are the same whichever process is scraped.
 */
export function registerStateMetrics(registry: Registry, { db, queue, stuckAfter = 5 }: { db: Database; queue?: JobCounter; stuckAfter?: number }) {
  // one query per scrape, shared by the three gauges
  let pending: { at: number; rows: Promise<ChainState[]> } | undefined
  function readState(): Promise<ChainState[]> {
    if (!pending || Date.now() - pending.at > 500) {
      const rows = chainsProgress(db.$client).then((chains) => chains.map((chain) => ({ ...chain, chainId: String(chain.chainId) })))
      pending = { at: Date.now(), rows }
    }
    return pending.rows
  }

  function chainGauge(name: string, help: string, value: (state: ChainState) => number | undefined) {
    return new Gauge({
      name,
      help,
      labelNames: ['chain_id'],
      registers: [registry],
      async collect() {
        this.reset()
        for (const state of await readState()) {
          const v = value(state)
          if (v !== undefined) this.set({ chain_id: state.chainId }, v)
        }
      },
    })
  }

  chainGauge('indexer_head_block', 'Latest head block seen per chain', (s) => s.head)
  chainGauge('indexer_indexed_block', 'Highest block below which every range is indexed', (s) => s.indexed)
  chainGauge('indexer_lag_blocks', 'Head minus indexed block per chain', (s) => (s.indexed === undefined ? undefined : Math.max(0, s.head - s.indexed)))
  new Gauge({
    name: 'indexer_stuck_ranges',
    help: 'Pending ranges that failed STUCK_RANGE_ATTEMPTS times or more (their cause is in /readyz and ranges.last_error)',
    labelNames: ['chain_id'],
    registers: [registry],
    async collect() {
      this.reset()
      for (const row of await stuckRangeCounts(db.$client, stuckAfter)) this.set({ chain_id: String(row.chainId) }, row.stuck)
    },
  })
  if (queue) {
    new Gauge({
      name: 'indexer_queue_jobs',
      help: 'Range jobs in the queue by state',
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized')
        for (const [state, count] of Object.entries(counts)) this.set({ state }, count)
      },
    })
  }
}
