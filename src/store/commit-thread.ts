/**
 * The commit stage's own thread (threaded-store.ts starts it): an
 * IndexStore on a database pool of its own, committing what the worker's
 * main thread sends it.
 *
 * Why a thread: a commit is a transaction of a dozen round trips (its
 * statements, its COPY streamed out), and PostgreSQL waits on the
 * committing process's event loop between them. On the main thread that
 * loop also scans RPC answers, decodes and folds: on the dense bench its
 * delay reached 0.5–1.7 s every few seconds, so each 37k-row bulk commit
 * held its transaction (and the lock that makes bulk commits take turns)
 * for 8–15 s while PostgreSQL worked ~1.5 s of it (bench/LOG.md, "a commit
 * thread"). Here the loop does nothing but commits, and the batch's folding
 * and COPY text run beside the main thread's fetching, on the other core.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { closeDatabase, createDatabase } from '../db/client.js'
import type { RangeResult } from './commit.js'
import { createHeapKeeper } from './commit-thread-heap.js'
import { createIndexStore } from './index-store.js'
import type { RowPieces } from './row-pieces.js'
import type { CommitReply, CommitRequest, CommitThreadSettings, HoldRequest, PlainError, PlainSettled } from './threaded-store.js'
import { commitTogetherOrEach, type BatchSettled } from './together-or-each.js'

const settings = workerData as CommitThreadSettings
const db = createDatabase({ url: settings.databaseUrl, poolSize: settings.poolSize })
const store = createIndexStore({ db })
const port = parentPort!
const heap = createHeapKeeper()

/** An error as the main thread rebuilds it: what its callers read (name, message, a driver's code), never the object. */
function plainError(error: unknown): PlainError {
  const { name = 'Error', message = String(error), code, stack } = (error ?? {}) as { name?: string; message?: string; code?: unknown; stack?: string }
  return { name, message, ...(typeof code === 'string' && { code }), ...(stack && { stack }) }
}

const inFlight = new Set<Promise<void>>()
let closing = false

function plainSettled({ ranges, split }: BatchSettled): PlainSettled {
  return {
    ranges: ranges.map((range) => (range.error ? { error: plainError(range.error) } : { outcome: range.outcome! })),
    ...(split && { split: { error: split.error && plainError(split.error) } }),
  }
}

/** Rows sent ahead of their commit (threaded-store.ts `hold`), by ticket, as bytes until the commit reads them. */
const heldRows = new Map<number, RowPieces>()

/** The results with the rows their tickets name, every ticket used up; one this thread never took fails the whole request. */
function withHeldRows(results: readonly RangeResult[]): RangeResult[] {
  let missing: RangeResult | undefined
  const whole = results.map(({ heldRows: ticket, ...result }) => {
    if (ticket === undefined) return result
    const rowPieces = heldRows.get(ticket)
    heldRows.delete(ticket)
    if (!rowPieces) missing ??= result
    return { ...result, ...(rowPieces && { rowPieces }) }
  })
  if (missing) throw new Error(`the commit thread does not hold the rows of range ${missing.job.fromBlock}-${missing.job.toBlock} (it was restarted since they were sent)`)
  return whole
}

async function commit({ id, results: sent, each }: CommitRequest): Promise<void> {
  let reply: CommitReply
  try {
    if (closing) throw new Error('the commit thread is closing')
    const results = withHeldRows(sent)
    reply = each
      ? { id, settled: plainSettled(await commitTogetherOrEach(store.commitRanges, results as RangeResult[])) }
      : { id, outcomes: await store.commitRanges(results as RangeResult[]) }
  } catch (error) {
    reply = { id, error: plainError(error) }
  }
  port.postMessage(reply)
}

async function close(): Promise<void> {
  closing = true
  // every commit held is answered, committed or not, before the pool and the thread end
  await Promise.allSettled(inFlight)
  await closeDatabase(db).catch(() => {})
  port.close()
}

port.on('message', (message: CommitRequest | HoldRequest | 'close') => {
  if (message === 'close') return void close()
  if ('hold' in message) return void heldRows.set(message.hold, message.rows)
  const committing = commit(message).finally(() => {
    inFlight.delete(committing)
    // the batch is garbage now (this handler and the commit held the last references to it)
    heap.committed()
  })
  inFlight.add(committing)
})
