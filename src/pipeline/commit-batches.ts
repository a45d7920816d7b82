import type { Database } from '../db/client.js'
import type { CommitOutcome, RangeResult } from '../store/commit.js'
import { createIndexStore, type IndexStore } from '../store/index-store.js'
import { commitTogetherOrEach, type BatchSettled } from '../store/together-or-each.js'

export type CommitBatcherOptions = {
  db: Database
  /** The store the statements go through (what it remembers between commits is its own); by default one of `db`'s. */
  store?: IndexStore
  /** Most ranges per statement. */
  maxRanges: number
  /**
   * Most attribution rows per statement (a third of ROWS_IN_FLIGHT): a batch takes ranges while they fit, one
   * range at least. A dense chain's batch is what the commit thread holds twice over (one committing, the next
   * prepared); a sparse chain's ranges reach `maxRanges` first. Unbounded when not given.
   */
  maxRows?: number
  /** Longest a range waits for others to share its statement, ms. */
  maxWaitMs: number
  /** Blocks in a full range (RANGE_SIZE). */
  rangeSize: number
  /** Ranges this process is working on, at any stage. */
  activeRanges: () => number
  /** A batch's statement failed and its ranges are committed one by one. */
  onSplit?: (ranges: number, error: Error | undefined) => void
}

/** Commit statements one process runs at once (see createCommitBatcher). */
const STATEMENTS_IN_FLIGHT = 2

/** How long a range waited for its statement to start, and the statement until committed (ms): the live stages commit_wait and commit. */
export type CommitTimes = (waitMs: number, statementMs: number) => void

/** A range waiting for its statement; its result is let go once handed to the store (see commitBatch). */
type Waiting = { result: RangeResult | undefined; rows: number; resolve: (outcome: CommitOutcome) => void; reject: (error: Error) => void; readyAt: number; timed?: CommitTimes | undefined }

/**
 * Aggregate stage of one worker process: ranges ready to commit share one
 * statement (commitRanges) when the indexer is catching up, which halves
 * the aggregates' cost on a chain with a long tail of codes.
 *
 * A range waits for others only when waiting can pay off and costs no
 * latency that matters:
 * - it is a full range (RANGE_SIZE blocks): the follower cuts those only
 *   while at least that many blocks wait behind the head, so a backfill's
 *   ranges wait and a range at the head commits at once;
 * - another range of this process is still on its way to the commit;
 * - for at most `maxWaitMs`, and never more than `maxRanges` together.
 * Waiting ranges hold their worker slots, so `maxRanges` stays below the
 * slots that keep the block fetches busy (four times WORKER_CONCURRENCY: worker.ts).
 *
 * At most STATEMENTS_IN_FLIGHT statements per process: ranges ready while
 * they run wait and share the next one. Concurrent commit statements of a
 * dense chain upsert the same aggregate rows (a busy code's totals, its
 * senders), so they wait on each other's row locks and redo speculative
 * inserts: three in parallel cost PostgreSQL a quarter more CPU per row
 * than one after another (bench/commit.bench.ts), on the cores the fetches
 * need too. Two overlap one statement's own rows with the other's shared
 * ones: on the dense backfill bench they gave the most transactions a
 * second for the least CPU of 1, 2 and no bound (BENCHMARKS.md).
 *
 * A batch that fails, or finds one of its ranges no longer pending, is
 * committed again range by range, so one range's trouble is its own: by the
 * store itself when it can (the commit thread, which holds its own copy of
 * the batch), so that the ranges' rows are not kept here meanwhile.
 */
export function createCommitBatcher(options: CommitBatcherOptions) {
  const store = options.store ?? createIndexStore({ db: options.db })
  const waiting: Waiting[] = []
  let committing = 0
  let statementsInFlight = 0
  let timer: NodeJS.Timeout | undefined

  const maxRows = options.maxRows ?? Number.POSITIVE_INFINITY
  const isFullRange = ({ job }: RangeResult) => job.toBlock - job.fromBlock + 1 >= options.rangeSize
  const rangesComing = () => options.activeRanges() - waiting.length - committing
  const waitingRows = () => waiting.reduce((sum, entry) => sum + entry.rows, 0)

  function shouldWait(): boolean {
    return (
      waiting.length < options.maxRanges && waiting.every((entry) => isFullRange(entry.result!)) && waitingRows() < maxRows && rangesComing() > 0
    )
  }

  /** Commits what waits now, or lets it wait (at most maxWaitMs from the first). */
  function consider() {
    // a statement in flight calls again when it ends
    if (waiting.length === 0 || statementsInFlight >= STATEMENTS_IN_FLIGHT) return
    if (shouldWait()) {
      timer ??= setTimeout(flush, options.maxWaitMs)
      return
    }
    flush()
  }

  function flush() {
    clearTimeout(timer)
    timer = undefined
    while (waiting.length > 0 && statementsInFlight < STATEMENTS_IN_FLIGHT) void commitBatch(takeBatch())
  }

  /**
   * The first waiting range and more of its regime (store/bulk-commit.ts: a batch never mixes final and tip
   * ranges), up to maxRanges in all and while their rows fit in maxRows.
   */
  function takeBatch(): Waiting[] {
    const final = waiting[0]!.result!.final === true
    const batch: Waiting[] = []
    let rows = 0
    for (let i = 0; i < waiting.length && batch.length < options.maxRanges; ) {
      const { result, rows: itsRows } = waiting[i]!
      if ((result!.final === true) !== final) i++
      else if (batch.length > 0 && rows + itsRows > maxRows) break
      else {
        rows += itsRows
        batch.push(...waiting.splice(i, 1))
      }
    }
    return batch
  }

  /** Tells a timed range how long it waited for the statement that began at `startedAt`, and that statement. */
  const timeEntry = (entry: Waiting, startedAt: number) => entry.timed?.(startedAt - entry.readyAt, performance.now() - startedAt)

  /**
   * The batch's ranges handed to the store, one statement or one per range
   * (commitTogetherOrEach), and let go of here: a store that holds the batch
   * elsewhere (the commit thread) keeps the only copy while it commits.
   */
  function settle(batch: Waiting[]): Promise<BatchSettled> {
    const results = batch.map((entry) => entry.result!)
    for (const entry of batch) entry.result = undefined
    return store.commitTogetherOrEach ? store.commitTogetherOrEach(results) : commitTogetherOrEach((ranges) => store.commitRanges(ranges), results)
  }

  /** One statement for the batch; if it fails, or finds a range no longer pending, one statement per range. */
  async function commitBatch(batch: Waiting[]) {
    committing += batch.length
    statementsInFlight++
    try {
      const startedAt = performance.now()
      const { ranges, split } = await settle(batch)
      if (split) options.onSplit?.(batch.length, split.error)
      batch.forEach((entry, i) => {
        const { outcome, error } = ranges[i]!
        if (error) return entry.reject(error)
        timeEntry(entry, startedAt)
        entry.resolve(outcome!)
      })
    } catch (error) {
      // the store could not take the batch (the thread refused it, or is closing): every range of it failed
      for (const entry of batch) entry.reject(error as Error)
    } finally {
      committing -= batch.length
      statementsInFlight--
      consider()
    }
  }

  return {
    /** Commits one range's result, alone or with others; resolves once its statement committed (and tells `timed` how long that took). */
    commit(result: RangeResult, timed?: CommitTimes): Promise<CommitOutcome> {
      return new Promise((resolve, reject) => {
        // its rows go to the store now (a commit thread's `hold`): they wait for their statement there, not here
        waiting.push({ result: store.hold?.(result) ?? result, rows: result.rows.length, resolve, reject, readyAt: performance.now(), timed })
        consider()
      })
    },
    /** A range of this process ended without reaching the commit: those waiting for it need not. */
    rangeLeft: consider,
  }
}

export type CommitBatcher = ReturnType<typeof createCommitBatcher>
