import type postgres from 'postgres'
import { enqueueRanges, rangeJobId, type RangeQueue } from '../pipeline/queue.js'
import { pendingRanges } from '../store/ranges.js'

/** A failed queue job, as far as the sweep reads it. */
type FailedJob = { id?: string | undefined; data?: { chainId: number } | undefined }

/**
 * What to do with the queue's failed jobs of chain `chainId` (other chains'
 * are left to their own follower): retry those whose range is still pending
 * (their ids are `pendingIds`), remove the rest.
 */
export function sortFailedJobs<J extends FailedJob>(failed: readonly J[], pendingIds: ReadonlySet<string>, chainId: number): { retry: J[]; remove: J[] } {
  const retry: J[] = []
  const remove: J[] = []
  for (const job of failed) {
    if (job.data?.chainId !== chainId) continue
    if (pendingIds.has(job.id ?? '')) retry.push(job)
    else remove.push(job)
  }
  return { retry, remove }
}

/**
 * Makes sure every pending range has a live job: jobs are lost when Redis
 * loses its data, and a job that exhausted its retries sits in `failed`.
 * Looks at up to `limit` pending ranges.
 */
export async function sweep(sql: postgres.ReservedSql, queue: RangeQueue, chainId: number, limit: number): Promise<void> {
  const pending = await pendingRanges(sql, chainId, limit)
  const { retry, remove } = sortFailedJobs(await queue.getFailed(0, 1_000), new Set(pending.map(rangeJobId)), chainId)
  for (const job of retry) await job.retry().catch(() => {})
  for (const job of remove) await job.remove().catch(() => {})
  await enqueueRanges(queue, pending)
}
