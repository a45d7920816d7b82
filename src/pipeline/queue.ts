import type { RangeJob } from '../store/ranges.js'
import { Queue, type JobsOptions } from 'bullmq'
import type { Redis } from '../redis/client.js'

export const RANGE_QUEUE = 'ranges'

/**
 * Deterministic job id: the same range of the same branch is the same job,
 * so enqueueing it again (a follower restart, a sweep) is a no-op, while the
 * same numbers on a new branch after a reorg make a new job.
 */
export function rangeJobId(job: RangeJob): string {
  return `${job.chainId}-${job.fromBlock}-${job.toBlock}-${job.toHash.slice(2, 18)}`
}

/** Errors meaning the node has not got a block or receipt yet (it lags), not that it failed. */
const NOT_THERE_YET = new Set(['BlockNotFoundError', 'ReceiptNotFoundError'])

/**
 * Delay before retry `attempt`: exponential from 500 ms, capped at 30 s,
 * with jitter. A lagging node is asked again soon instead: backing off for
 * half a minute would stall a backfill behind one slow replica.
 */
export function rangeRetryDelay(attemptsMade: number, error?: Error): number {
  const base = error && NOT_THERE_YET.has(error.name) ? 500 : Math.min(30_000, 500 * 2 ** Math.min(attemptsMade, 10))
  return Math.round(base * (0.75 + Math.random() * 0.5))
}

/**
 * A range job is tried `attempts` times (STUCK_RANGE_ATTEMPTS) with a backoff;
 * the RPC transport below it already retried each call a bounded number of
 * times, so a range that fails this often is stuck: the worker reports it,
 * and the follower's sweep tries it again every 15 s until it heals.
 */
export function rangeJobOptions(attempts: number): JobsOptions {
  return { attempts, backoff: { type: 'capped' }, removeOnComplete: true, removeOnFail: { age: 24 * 3600 } }
}

export function createRangeQueue(connection: Redis, prefix: string, attempts = 5) {
  return new Queue<RangeJob>(RANGE_QUEUE, { connection, prefix, defaultJobOptions: rangeJobOptions(attempts) })
}

export type RangeQueue = ReturnType<typeof createRangeQueue>

/** Adds range jobs; ids make repeats no-ops. */
export async function enqueueRanges(queue: RangeQueue, jobs: readonly RangeJob[]): Promise<void> {
  if (jobs.length === 0) return
  await queue.addBulk(jobs.map((data) => ({ name: 'range', data, opts: { jobId: rangeJobId(data) } })))
}
