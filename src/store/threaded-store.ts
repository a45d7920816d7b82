import { Worker } from 'node:worker_threads'
import type { CommitOutcome, RangeResult } from './commit.js'
import type { IndexStore } from './index-store.js'
import { rowPieces, transferList, type RowPieces } from './row-pieces.js'
import type { BatchSettled } from './together-or-each.js'

/**
 * An IndexStore whose commits run on a thread of their own (commit-thread.ts
 * says why): the worker's main thread hands each batch over and goes on
 * fetching while the thread folds it, writes its COPY text and drives the
 * transaction. What it commits and how is exactly the in-process store's
 * (index-store.ts): the thread runs that code on a pool of its own.
 *
 * A batch crosses by structured clone (~3 µs a row on the main thread,
 * against ~20 µs of folding and COPY text it no longer does); rows of one
 * record keep sharing it, as the fold expects. A range's rows cross as soon
 * as the range is ready (`hold`), before their statement: on a dense backfill
 * they wait a second or more for it, and waiting on the main thread they
 * reached its old generation, to stay there as garbage once sent until a
 * full collection (the dense peak was ~38 MiB higher; bench/LOG.md). Sent
 * at once, the main thread's copy dies young; they cross as the clone's
 * bytes (row-pieces.ts), so they wait on the thread outside its heap too,
 * and become objects a piece at a time as the commit reads them. The thread then owns them: a
 * batch that must be committed range by range is retried there
 * (commitTogetherOrEach), so the caller lets go of its rows once they are
 * sent, and a dense backfill's rows in the commit are held once, not twice.
 * A thread that dies fails the commits it held, as a dropped connection
 * would (their ranges are retried as any failed range is), and the next
 * commit starts another: a range's commit is exactly once whatever happens
 * to the thread.
 */

export type CommitThreadSettings = { databaseUrl: string; poolSize: number }
/** `each`: committed by commitTogetherOrEach, answered with `settled`; else by commitRanges, answered with `outcomes`. */
export type CommitRequest = { id: number; results: readonly RangeResult[]; each?: boolean }
/** A result's rows sent ahead of its commit (IndexStore.hold) as bytes (row-pieces.ts), kept by the thread under `ticket` until a CommitRequest names it. */
export type HoldRequest = { hold: number; rows: RowPieces }
export type PlainError = { name: string; message: string; code?: string; stack?: string }
/** A BatchSettled as it crosses back: errors as plain objects (an Error's own fields and class do not survive the clone). */
export type PlainSettled = { ranges: Array<{ outcome: CommitOutcome } | { error: PlainError }>; split?: { error: PlainError | undefined } }
export type CommitReply = { id: number; outcomes?: CommitOutcome[]; settled?: PlainSettled; error?: PlainError }

export type ThreadedIndexStore = IndexStore & {
  commitTogetherOrEach(results: readonly RangeResult[]): Promise<BatchSettled>
  hold(result: RangeResult): RangeResult
  /** Lets the commits in flight end, then closes the thread's pool and the thread. */
  close(): Promise<void>
}

/**
 * Connections of the thread's pool: the commit batcher runs two statements
 * at once (commit-batches.ts), one more lets a lone range's commit pass a
 * bulk commit waiting for its turn.
 */
const DEFAULT_POOL_SIZE = 3

/**
 * Rows from which a range's rows are sent ahead of its commit (`hold`). A dense range's thousands of rows wait
 * seconds for their statement; a sparse chain's few hundred commit within the batch's short wait, and sent ahead
 * they made the thread's young generation grow: the everyday chain's peak RSS rose ~20 MiB (bench/LOG.md).
 */
export const HOLD_FROM_ROWS = 1_000

/**
 * The thread's module beside this one. From the sources (tests, benches, a
 * working copy whose dist/ is stale), the thread registers tsx first, as
 * bin/attribution.mjs does for the main thread: loader hooks are not
 * inherited by a worker thread.
 */
function threadSource(): { source: string | URL; eval: boolean } {
  if (!import.meta.url.endsWith('.ts')) return { source: new URL('./commit-thread.js', import.meta.url), eval: false }
  const tsx = import.meta.resolve('tsx/esm/api')
  const entry = new URL('./commit-thread.ts', import.meta.url).href
  return { source: `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}) })`, eval: true }
}

/** The error a commit failed with, rebuilt on this side of the thread: its name, message and driver code, as callers read them. */
function rebuilt({ name, message, code, stack }: PlainError): Error {
  const error = Object.assign(new Error(message), code === undefined ? {} : { code })
  error.name = name
  if (stack) error.stack = stack
  return error
}

export function createThreadedIndexStore({
  databaseUrl,
  poolSize = DEFAULT_POOL_SIZE,
  holdFromRows = HOLD_FROM_ROWS,
}: {
  databaseUrl: string
  poolSize?: number
  holdFromRows?: number
}): ThreadedIndexStore {
  const waiting = new Map<number, { resolve: (reply: CommitReply) => void; reject: (error: Error) => void }>()
  let nextId = 0
  let thread: Worker | undefined
  let closing: Promise<void> | undefined

  /** Fails every commit the thread held: it is gone, and with it their transactions (rolled back by PostgreSQL). */
  function lost(gone: Worker, error: Error) {
    if (thread !== gone) return
    thread = undefined
    for (const { reject } of waiting.values()) reject(error)
    waiting.clear()
  }

  function start(): Worker {
    const { source, eval: evaluated } = threadSource()
    const started = new Worker(source, { eval: evaluated, workerData: { databaseUrl, poolSize } satisfies CommitThreadSettings })
    started.on('message', (reply: CommitReply) => {
      const commit = waiting.get(reply.id)
      if (!commit) return
      waiting.delete(reply.id)
      if (reply.error) commit.reject(rebuilt(reply.error))
      else commit.resolve(reply)
    })
    started.on('error', (error) => lost(started, new Error(`the commit thread failed: ${error.message}`)))
    started.on('exit', (code) => lost(started, new Error(`the commit thread exited (code ${code})`)))
    return started
  }

  /** Sends the batch (a copy: nothing of it is kept on this side) and resolves with the thread's reply. */
  function send(results: readonly RangeResult[], each: boolean): Promise<CommitReply> {
    if (closing) return Promise.reject(new Error('the commit thread is closing'))
    thread ??= start()
    const id = nextId++
    const reply = new Promise<CommitReply>((resolve, reject) => waiting.set(id, { resolve, reject }))
    try {
      thread.postMessage({ id, results, ...(each && { each }) } satisfies CommitRequest)
    } catch (error) {
      // a value the structured clone refuses: this commit fails alone, nothing reached the thread
      waiting.get(id)!.reject(error as Error)
      waiting.delete(id)
    }
    return reply
  }

  let nextTicket = 0
  /**
   * The rows go now, the rest of the result with its commit. A thread that ends meanwhile takes them along: the
   * commit naming them then fails (the thread that took it does not hold them) and the range is retried, as
   * when a thread dies with a batch. A range of few rows stays whole (HOLD_FROM_ROWS).
   */
  function hold(result: RangeResult): RangeResult {
    if (closing || result.heldRows !== undefined || result.rows.length < holdFromRows) return result
    thread ??= start()
    const ticket = nextTicket++
    try {
      const rows = rowPieces(result.rows)
      thread.postMessage({ hold: ticket, rows } satisfies HoldRequest, transferList(rows))
    } catch {
      // rows the structured clone refuses: they stay with the result, whose commit then fails alone
      return result
    }
    return { ...result, rows: [], heldRows: ticket }
  }

  const commitRanges = async (results: readonly RangeResult[]) => (await send(results, false)).outcomes!

  async function commitTogetherOrEach(results: readonly RangeResult[]): Promise<BatchSettled> {
    const { ranges, split } = (await send(results, true)).settled!
    return {
      ranges: ranges.map((range) => ('error' in range ? { error: rebuilt(range.error) } : range)),
      ...(split && { split: { error: split.error && rebuilt(split.error) } }),
    }
  }

  return {
    commitRanges,
    commitRange: async (result) => (await commitRanges([result]))[0]!,
    commitTogetherOrEach,
    hold,
    close() {
      closing ??= (async () => {
        const closing = thread
        if (!closing) return
        // the thread answers the commits it holds before it ends (commit-thread.ts)
        const exited = new Promise<void>((resolve) => closing.once('exit', () => resolve()))
        closing.postMessage('close')
        await exited
      })()
      return closing
    },
  }
}
