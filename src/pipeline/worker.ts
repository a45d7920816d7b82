import { Worker, type Job } from 'bullmq'
import pLimit from 'p-limit'
import type { Database } from '../db/client.js'
import { flagMismatch, isRangePending, recordRangeFailure, splitRange } from '../store/ranges.js'
import type { Logger } from '../logger.js'
import type { IndexerMetrics } from '../metrics/indexer.js'
import type { LiveStage } from '../metrics/live-stages.js'
import type { Redis } from '../redis/client.js'
import type { Rpc } from '../rpc/client.js'
import { commitRange, type AttributionRow, type CommitOutcome, type RangeResult } from '../store/commit.js'
import { createIndexStore, type IndexStore } from '../store/index-store.js'
import { createCommitBatcher } from './commit-batches.js'
import type { Finality } from './finality.js'
import { BranchMismatchError, fetchRange, RangeTooDenseError, type FetchedRange } from './fetch.js'
import type { RangeJob } from '../store/ranges.js'
import { enqueueRanges, RANGE_QUEUE, rangeRetryDelay, type RangeQueue } from './queue.js'
import { createRowsInFlight, type LargeBacklog, type RowsInFlight, type RowsTicket } from './rows-in-flight.js'
import type { CodeResolver } from './resolve.js'
import { storedRecord } from '../attribution/records.js'

/** A chain as a worker indexes it; without `finality` every range takes the tip path. */
export type WorkerChain = { chainId: number; rpc: Rpc; entryPoints: ReadonlySet<string>; finality?: Finality }

export type RangeWorkerOptions = {
  db: Database
  connection: Redis
  prefix: string
  /** Block fetches in flight at once; RANGES_PER_BLOCK_FETCH times as many ranges are worked on, so receipts and commits overlap the fetches. */
  concurrency: number
  /** Blocks in a full range (RANGE_SIZE): full ranges mean a backlog, and share commit statements. */
  rangeSize: number
  /** Most attribution rows a range may hold (MAX_RANGE_ROWS): a denser one is split, a denser block indexed alone (fetch.ts). */
  maxRangeRows: number
  /** Where the pieces of a split range are enqueued (the follower's sweep would find them too, later). */
  queue: RangeQueue
  /** Lock duration and stalled-check interval, ms. */
  lockMs?: number
  /** Failed attempts after which a range is reported stuck (STUCK_RANGE_ATTEMPTS). */
  stuckAfter?: number
  chains: ReadonlyMap<number, WorkerChain>
  resolver: CodeResolver
  logger: Logger
  metrics?: IndexerMetrics
  /** Where commits go (the daemon's: a thread of their own, store/threaded-store.ts); by default one in this thread on `db`. */
  store?: IndexStore
  /** Most attribution rows held between fetch and commit (ROWS_IN_FLIGHT, rows-in-flight.ts); a commit batch takes a third. Unbounded when not given. */
  rowsInFlight?: number
  /** Told when the rows fetched (or expected from a range's blocks) and waiting for their commit pass `rows` (the daemon bounds its heap's growth then). */
  largeBacklog?: LargeBacklog
}

/**
 * Ranges worked on per block fetch slot. A range spends longer after its
 * blocks than fetching them — its receipts (another round trip), then the
 * wait to share a commit statement and the statement itself — and holds its
 * worker slot all along, so with twice as many ranges as block fetches the
 * fetches idled behind the commits wherever answers are slow to come back:
 * on the remote bench profile (50 ms per answer) four times as many gave 10%
 * more (BENCHMARKS.md, backfill), eight times 3% more again, and the fast node
 * (bound by the cores) and the peak memory of the dense chain did not move.
 */
const RANGES_PER_BLOCK_FETCH = 4

export type RangeOutcome = { outcome: 'indexed' | 'stale' | 'split'; txCount: number; inserted: number }

/** Resolve stage: one row per (record, distinct code), each with what the code means. */
async function resolveRows(fetched: FetchedRange, resolver: CodeResolver): Promise<AttributionRow[]> {
  const resolutionOf = await resolver.resolve(fetched.attributions.map((record) => record.attribution))
  const rows: AttributionRow[] = []
  for (const record of fetched.attributions) {
    const seen = new Set<string>()
    const stored = storedRecord(record)
    for (const entry of record.attribution.entries) {
      if (seen.has(entry.code)) continue
      seen.add(entry.code)
      rows.push({ record: stored, code: entry.code, resolution: resolutionOf(record.attribution, entry) })
    }
  }
  return rows
}

/**
 * Indexes one range: fetch & detect, decode, resolve, aggregate. Safe to run
 * any number of times and to kill at any instant — the effect in Postgres
 * happens once, in the transaction of its commit statement.
 */
type ProcessOptions = Omit<RangeWorkerOptions, 'connection' | 'prefix' | 'concurrency' | 'rangeSize' | 'lockMs' | 'stuckAfter' | 'queue' | 'rowsInFlight' | 'largeBacklog'> & {
  /** Where a backfill's range waits for room before its fetch, and counts its rows until its commit ends (ROWS_IN_FLIGHT). */
  rowsHeld?: RowsInFlight
  /** Enqueues the pieces of a range split for its density; without it the follower's sweep finds them. */
  enqueue?: (jobs: readonly RangeJob[]) => Promise<void>
  /** Where a block past MAX_RANGE_ROWS alone is indexed: one at a time per worker, so only one is held whole. */
  oneHeavyBlockAtATime?: <T>(index: () => Promise<T>) => Promise<T>
  limitBlockFetches?: <T>(fetch: () => Promise<T>) => Promise<T>
  /** The aggregate stage; by default the range's own statement. */
  commit?: (result: RangeResult) => Promise<CommitOutcome>
  /**
   * A range at the head (fewer blocks than RANGE_SIZE): it is almost always pending, so that check goes
   * alongside its fetch rather than before it, and its commit path is decided without waiting for the node
   * (finality.ts isFinalNow): a block at the head waits for neither round trip (issue 40.3).
   */
  atTheHead?: boolean
  /** Told how long each stage took (ms), for a range at the head (metrics/live-stages.ts). */
  stage?: (stage: 'fetch' | 'resolve' | 'finality', ms: number) => void
}

export async function processRange(job: RangeJob, options: ProcessOptions): Promise<RangeOutcome> {
  // a range at the head never waits for room: it is small, and its latency is the live path's
  const ticket = options.atTheHead ? undefined : await options.rowsHeld?.enter()
  try {
    return await indexRange(job, options, ticket)
  } finally {
    ticket?.leave()
  }
}

async function indexRange(job: RangeJob, options: ProcessOptions, ticket: RowsTicket | undefined): Promise<RangeOutcome> {
  const { db, chains, resolver, metrics } = options
  const chain = chains.get(job.chainId)
  if (!chain) throw new Error(`chain ${job.chainId} is not configured on this worker`)
  let stageStartedAt = performance.now()
  const stageEnded = (stage: 'fetch' | 'resolve' | 'finality') => {
    const now = performance.now()
    options.stage?.(stage, now - stageStartedAt)
    stageStartedAt = now
  }
  // skip the RPC work for a range already indexed or replaced by a reorg (at the head: skip its commit)
  const pendingCheck = isRangePending(db.$client, job)
  if (options.atTheHead) pendingCheck.catch(() => {})
  else if (!(await pendingCheck)) return { outcome: 'stale', txCount: 0, inserted: 0 }

  let fetched: FetchedRange | undefined
  try {
    fetched = await fetchRange(chain.rpc, job, chain.entryPoints, {
      maxRows: options.maxRangeRows,
      ...(options.limitBlockFetches && { limitBlockFetches: options.limitBlockFetches }),
      // counted from its blocks, seconds before its rows on a dense chain: the large backlog is told then
      ...(ticket && { expectRows: (rows: number) => ticket.expect(rows) }),
    })
  } catch (error) {
    if (error instanceof BranchMismatchError) await flagMismatch(db.$client, job)
    if (error instanceof RangeTooDenseError) {
      if (error.pieces.length > 1) return splitDenseRange(job, error, options)
      // a block cannot be split: fetched again and held whole, by one range at a time (the others dropped theirs)
      const { oneHeavyBlockAtATime = (index) => index() } = options
      metrics?.denseRange(job.chainId, 'block_alone')
      // the block's own pass counts its rows (and waits for room) itself
      ticket?.leave()
      return oneHeavyBlockAtATime(() => processRange(job, { ...options, maxRangeRows: Number.POSITIVE_INFINITY }))
    }
    throw error
  }
  if (options.atTheHead && !(await pendingCheck)) return { outcome: 'stale', txCount: 0, inserted: 0 }
  stageEnded('fetch')
  let rows: AttributionRow[] | undefined = await resolveRows(fetched, resolver)
  ticket?.hold(rows.length)
  stageEnded('resolve')
  const final = (await (options.atTheHead ? chain.finality?.isFinalNow(job.toBlock) : chain.finality?.isFinal(job.toBlock))) ?? false
  stageEnded('finality')
  const commit = options.commit ?? ((result: RangeResult) => commitRange(db, result))
  const counts = countsOf(fetched)
  const committing = commit({ job, final, finalizedAt: chain.finality?.boundaryTime(), blocks: fetched.blocks, txCount: fetched.txCount, rows, malformed: fetched.malformed })
  // the range's records and rows are the commit's now (the commit thread's copy, the batcher lets go of its own):
  // this frame lets go too, or a dense backfill holds every row of the commits in flight a second time meanwhile
  fetched = undefined
  rows = undefined
  const { committed, inserted } = await committing
  if (committed) metrics?.rangeIndexed(job.chainId, counts, inserted)
  return { outcome: committed ? 'indexed' : 'stale', txCount: counts.txCount, inserted }
}

const TRANSACTION = { kind: 'transaction' } as const
const USER_OPERATION = { kind: 'userOperation' } as const

/** What the metrics count of a fetched range (metrics/indexer.ts rangeIndexed), without holding its records. */
function countsOf({ blocks, txCount, malformed, attributions }: FetchedRange) {
  return { blocks, txCount, malformed, attributions: attributions.map((record) => (record.kind === 'transaction' ? TRANSACTION : USER_OPERATION)) }
}

/** The range is replaced by its pieces, which are indexed as ranges of their own. */
async function splitDenseRange(job: RangeJob, dense: RangeTooDenseError, options: ProcessOptions): Promise<RangeOutcome> {
  if (!(await splitRange(options.db.$client, job, dense.pieces))) return { outcome: 'stale', txCount: 0, inserted: 0 }
  options.logger.child({ component: 'worker' }).info(
    { chain_id: job.chainId, range: `${job.fromBlock}-${job.toBlock}`, rows: dense.rows, max_range_rows: options.maxRangeRows, pieces: dense.pieces.length },
    'range split: its blocks hold more attribution rows than MAX_RANGE_ROWS',
  )
  options.metrics?.denseRange(job.chainId, 'split')
  await options.enqueue?.(dense.pieces)
  return { outcome: 'split', txCount: 0, inserted: 0 }
}

/** Fewer blocks than RANGE_SIZE: the follower cuts such a range only at the head (or a dense range was split). */
const isAtTheHead = (job: RangeJob, rangeSize: number) => job.toBlock - job.fromBlock + 1 < rangeSize

/**
 * The stages of a range at the head (fewer blocks than RANGE_SIZE: the
 * follower cuts those only at the head) as the live metrics time them
 * (metrics/live-stages.ts): the job's wait in the queue (its enqueue and
 * pick-up times are the queue's own), each stage here, and the job from
 * enqueued to committed. Undefined for a backfill's range, or without metrics.
 */
function liveStagesOf(job: Job<RangeJob>, options: Pick<RangeWorkerOptions, 'metrics' | 'rangeSize'>) {
  const { metrics } = options
  const { chainId } = job.data
  if (!metrics || !isAtTheHead(job.data, options.rangeSize)) return undefined
  if (job.processedOn !== undefined) metrics.liveStage(chainId, 'queued', job.processedOn - job.timestamp)
  return {
    stage: (stage: LiveStage, ms: number) => metrics.liveStage(chainId, stage, ms),
    commitTimes(waitMs: number, statementMs: number) {
      metrics.liveStage(chainId, 'commit_wait', waitMs)
      metrics.liveStage(chainId, 'commit', statementMs)
    },
    done: () => metrics.liveStage(chainId, 'worker', Date.now() - job.timestamp),
  }
}

export function createRangeWorker(options: RangeWorkerOptions) {
  const logger = options.logger.child({ component: 'worker' })
  // the RPC sees `concurrency` block fetches at most; the ranges in between fetch receipts and commit meanwhile
  const limitBlockFetches = pLimit(options.concurrency)
  const oneHeavyBlockAtATime = pLimit(1)
  const rowsInFlight = options.rowsInFlight === undefined ? undefined : createRowsInFlight(options.rowsInFlight, options.maxRangeRows, options.largeBacklog)
  const stuckAfter = options.stuckAfter ?? 5
  // the ranges this process works on, with their lock tokens, so a shutdown can hand them back
  const active = new Map<string, { job: Job<RangeJob>; token: string | undefined }>()
  const commits = createCommitBatcher({
    db: options.db,
    // one store per worker process: the commit's memory between statements is its own
    store: options.store ?? createIndexStore({ db: options.db }),
    // fewer than the slots beyond the block fetches: ranges waiting to commit never idle the fetches
    maxRanges: options.concurrency,
    // one batch committing, the next prepared on the commit thread, a third forming (rows-in-flight.ts)
    ...(options.rowsInFlight !== undefined && { maxRows: Math.max(1, Math.floor(options.rowsInFlight / 3)) }),
    maxWaitMs: 500,
    rangeSize: options.rangeSize,
    // ranges waiting for room before their fetch are not on their way to the commit: nothing waits for them
    activeRanges: () => active.size - (rowsInFlight?.waiting ?? 0),
    onSplit: (ranges, error) =>
      logger.warn({ ranges, err: error?.message }, error ? 'batched commit failed; committing its ranges one by one' : 'a batched range was no longer pending; committing one by one'),
  })

  /** Every failure is written to the range (attempts, last_error); reaching `stuckAfter` is said once, loudly. */
  async function recordFailure(job: RangeJob, error: Error) {
    const cause = `${error.name}: ${error.message}`
    const attempts = await recordRangeFailure(options.db.$client, job, cause).catch(() => undefined)
    const details = { chain_id: job.chainId, range: `${job.fromBlock}-${job.toBlock}`, attempts, err: cause }
    if (attempts === stuckAfter) {
      logger.error(details, `range stuck: failed ${attempts} times (STUCK_RANGE_ATTEMPTS); later ranges continue, this one is retried every sweep`)
    } else logger.warn(details, 'range failed; will retry')
  }

  let releasing = false
  const worker = new Worker<RangeJob, RangeOutcome>(
    RANGE_QUEUE,
    async (job: Job<RangeJob>, token?: string) => {
      active.set(job.id!, { job, token })
      const live = liveStagesOf(job, options)
      try {
        const outcome = await processRange(job.data, {
          ...options,
          limitBlockFetches,
          commit: (result) => commits.commit(result, live?.commitTimes),
          enqueue: (pieces) => enqueueRanges(options.queue, pieces),
          oneHeavyBlockAtATime,
          ...(rowsInFlight && { rowsHeld: rowsInFlight }),
          atTheHead: isAtTheHead(job.data, options.rangeSize),
          ...(live && { stage: live.stage }),
        })
        if (outcome.outcome === 'indexed') live?.done()
        return outcome
      } catch (error) {
        // a range handed back at shutdown fails here as its connections close: not the range's failure
        if (!releasing) await recordFailure(job.data, error as Error)
        throw error
      } finally {
        active.delete(job.id!)
        commits.rangeLeft()
      }
    },
    {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: options.concurrency * RANGES_PER_BLOCK_FETCH,
      // a killed worker's range is picked up again after the lock expires
      lockDuration: options.lockMs ?? 30_000,
      stalledInterval: options.lockMs ?? 30_000,
      // a range that keeps stalling (killed mid-job repeatedly) must not be failed for it
      maxStalledCount: 10,
      settings: { backoffStrategy: (attemptsMade: number, _type?: string, error?: Error) => rangeRetryDelay(attemptsMade, error) },
    },
  )
  worker.on('failed', (job) => options.metrics?.rangeFailed(job?.data.chainId))
  worker.on('error', (error) => logger.error({ err: error.message }, 'worker error'))

  /**
   * Shutdown: puts the ranges in progress back in the waiting list at once,
   * lock released, so another worker takes them now rather than after
   * JOB_LOCK_MS. Their work here is abandoned; a commit that still lands is
   * harmless (exactly once in Postgres).
   */
  async function releaseActiveRanges(): Promise<number> {
    releasing = true
    const held = [...active.values()]
    active.clear()
    const released = await Promise.allSettled(held.map(({ job, token }) => job.moveToWait(token)))
    return released.filter((result) => result.status === 'fulfilled').length
  }
  return Object.assign(worker, { releaseActiveRanges })
}

export type RangeWorker = ReturnType<typeof createRangeWorker>
