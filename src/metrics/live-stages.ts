import { Histogram, type Registry } from 'prom-client'

/**
 * The stages of a live block's way from the node to the API (issue 40.3), in
 * order. The follower's, per tick that cut ranges at the head:
 * - `wake`: a pushed head (WS_URL) to the follower's tick starting;
 * - `head`: reading the head and recording it;
 * - `reconcile`: checking the index is on the node's branch;
 * - `cut`: planning the ranges, their headers, writing them to `ranges`;
 * - `enqueue`: adding their jobs to the queue;
 * - `follower`: the tick from its start to the jobs enqueued.
 * The worker's, per range at the head (shorter than RANGE_SIZE):
 * - `queued`: the job enqueued to a worker taking it;
 * - `fetch`: the range's blocks and candidate receipts fetched and scanned for suffixes;
 * - `resolve`: the codes resolved to registry entries;
 * - `finality`: deciding which commit path the range takes;
 * - `commit_wait`: ready to commit to its statement starting (batching, statements in flight);
 * - `commit`: the statement's transaction, until PostgreSQL made it visible;
 * - `worker`: the job enqueued to its rows visible.
 */
export const LIVE_STAGES = ['wake', 'head', 'reconcile', 'cut', 'enqueue', 'follower', 'queued', 'fetch', 'resolve', 'finality', 'commit_wait', 'commit', 'worker'] as const
export type LiveStage = (typeof LIVE_STAGES)[number]

/** Fine below 100 ms, where the live goal is (p99 ≤ 100 ms from the node to the API). */
const BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5]

export function createLiveStageMetrics(registry: Registry) {
  const stages = new Histogram({
    name: 'indexer_live_stage_seconds',
    help: `Time a block at the head spends in each stage of its way to the API, by stage (${LIVE_STAGES.join(', ')}; src/metrics/live-stages.ts)`,
    labelNames: ['chain_id', 'stage'],
    buckets: BUCKETS,
    registers: [registry],
  })
  return {
    liveStage: (chainId: number, stage: LiveStage, ms: number) => stages.observe({ chain_id: String(chainId), stage }, Math.max(0, ms) / 1000),
  }
}
