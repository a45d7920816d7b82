import { Worker } from 'node:worker_threads'
import type { CommitOutcome, RangeResult } from './commit.js'
import type { IndexStore } from './index-store.js'

/**
 * An IndexStore whose commits run on a thread of their own (commit-thread.ts
 * says why): the worker's main thread hands each batch over and goes on
 * fetching while the thread folds it, writes its COPY text and drives the
 * transaction. What it commits and how is exactly the in-process store's
 * (index-store.ts): the thread runs that code on a pool of its own.
 *
 * A batch crosses by structured clone (~3 µs a row on the main thread,
 * against ~20 µs of folding and COPY text it no longer does); rows of one
 * record keep sharing it, as the fold expects. A thread that dies fails the
 * commits it held, as a dropped connection would, and the next commit starts
 * another: a range's commit is exactly once whatever happens to the thread.
 */

export type CommitThreadSettings = { databaseUrl: string; poolSize: number }
export type CommitRequest = { id: number; results: readonly RangeResult[] }
export type CommitReply = { id: number; outcomes?: CommitOutcome[]; error?: { name: string; message: string; code?: string; stack?: string } }

export type ThreadedIndexStore = IndexStore & {
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
function rebuilt({ name, message, code, stack }: NonNullable<CommitReply['error']>): Error {
  const error = Object.assign(new Error(message), code === undefined ? {} : { code })
  error.name = name
  if (stack) error.stack = stack
  return error
}

export function createThreadedIndexStore({ databaseUrl, poolSize = DEFAULT_POOL_SIZE }: { databaseUrl: string; poolSize?: number }): ThreadedIndexStore {
  const waiting = new Map<number, { resolve: (outcomes: CommitOutcome[]) => void; reject: (error: Error) => void }>()
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
    started.on('message', ({ id, outcomes, error }: CommitReply) => {
      const commit = waiting.get(id)
      if (!commit) return
      waiting.delete(id)
      if (error) commit.reject(rebuilt(error))
      else commit.resolve(outcomes!)
    })
    started.on('error', (error) => lost(started, new Error(`the commit thread failed: ${error.message}`)))
    started.on('exit', (code) => lost(started, new Error(`the commit thread exited (code ${code})`)))
    return started
  }

  function commitRanges(results: readonly RangeResult[]): Promise<CommitOutcome[]> {
    if (closing) return Promise.reject(new Error('the commit thread is closing'))
    thread ??= start()
    const id = nextId++
    const reply = new Promise<CommitOutcome[]>((resolve, reject) => waiting.set(id, { resolve, reject }))
    try {
      thread.postMessage({ id, results } satisfies CommitRequest)
    } catch (error) {
      // a value the structured clone refuses: this commit fails alone, nothing reached the thread
      waiting.get(id)!.reject(error as Error)
      waiting.delete(id)
    }
    return reply
  }

  return {
    commitRanges,
    commitRange: async (result) => (await commitRanges([result]))[0]!,
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
