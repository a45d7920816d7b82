import { getHeapStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * Garbage the commit thread lets pile up past what its last full collection
 * kept, before it collects again itself. 64 MB let the thread's heap reach
 * 140–200 MB around ~60 live on the dense bench; at 32 it stays at 115–140,
 * for a collection every second or so (~30 ms each, issue 40.5, bench/LOG.md).
 */
export const THREAD_HEAP_HEADROOM_BYTES = 32 * 1024 * 1024

/**
 * Keeps the commit thread's heap near what it holds (commit-thread.ts calls
 * `committed()` as each commit ends).
 *
 * A dense backfill's commit is a burst: the batch's rows arrive at once
 * (the structured clone of ~37k rows, ~60 MB of objects), its COPY text
 * and folded aggregates are made in a second or two, and all of it is
 * garbage a few seconds later, when the transaction ends. V8 starts its
 * next full collection when the heap reaches a multiple of what the last
 * one kept, and the burst runs past that mark while the collector is still
 * marking: on the dense bench the thread's heap reached 330–450 MB around
 * a live set of 120–200 MB, the largest part of the process's peak
 * (bench/LOG.md). The thread knows better when its garbage is due: when a
 * commit ends, its batch is unreachable. So then, once the heap holds more
 * than `headroomBytes` past what the last collection kept, it collects —
 * here, on the thread, while its loop has nothing else to do than wait on
 * the other commit's statements (a collection of ~150 MB is ~50–100 ms of
 * this thread; the worker's main thread goes on meanwhile). On a sparse
 * chain, commits are small and the mark is rarely reached.
 *
 * The collector is reached through `--expose-gc` set at run time and a
 * fresh context (the flag only adds `gc` to contexts made after it): V8
 * exposes no other way to ask for a collection, and a worker thread takes
 * no V8 flags of its own.
 */
export function createHeapKeeper(headroomBytes = THREAD_HEAP_HEADROOM_BYTES, used = () => getHeapStatistics().used_heap_size, collect = fullCollector()) {
  let kept = used()
  return {
    /** A commit ended and let go of its batch: collects if the garbage since the last collection passed the headroom. */
    committed(): boolean {
      if (used() - kept <= headroomBytes) return false
      collect()
      kept = used()
      return true
    },
  }
}

/** A full collection of the calling thread's heap, now (the means: createHeapKeeper's comment). */
export function fullCollector(): () => void {
  setFlagsFromString('--expose-gc')
  return runInNewContext('gc') as () => void
}
