import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks'
import { getHeapStatistics, setFlagsFromString } from 'node:v8'
import { fullCollector } from '../store/commit-thread-heap.js'

/**
 * While a full collection leaves less than this in use, V8 grows the heap at
 * its own pace. On the dense bench the main thread's collections leave
 * 88–111 MiB (the rows and receipts of the ranges in flight): at 112 MiB
 * most of them fell under the mark, the bound let go, and the heap grew to
 * 250–400 MB before its next collection. The everyday chain's leave 50–75
 * (issue 40.5, bench/LOG.md).
 */
export const FREE_GROWTH_BELOW_BYTES = 80 * 1024 * 1024

/**
 * Once bounded, the bound holds until a collection leaves less than this
 * share of the mark. The flag sets the threshold of the collection after the
 * one that reads it: a dense backfill's collections leave 68–111 MiB, and one
 * under the mark let go of the bound for the next, which then let the heap
 * grow from 105 to 350 MB (the peak, 756 MiB RSS, in one bench round).
 */
const BOUND_HOLDS_ABOVE_SHARE = 0.5

/**
 * Attribution rows fetched (or expected from a range's blocks) and waiting
 * for their commit past which the backfill's live set is a large one
 * (expectLargeHeap): a commit batch's worth at the default ROWS_IN_FLIGHT.
 * On the dense bench the rows pass it 5–7 s into the backfill (those
 * expected, 3.2–4.0 s after the daemon starts, up to 1.3 s before a range
 * holds its rows), and the collection then leaves 80–97 MiB in use on the
 * main thread (about the 80 MiB mark a collection starts the bound at).
 * The everyday chain's ranges hold a few hundred rows each, sixteen ranges
 * ~3,000: never near it.
 */
export const LARGE_BACKLOG_ROWS = 20_000

const isFullCollection = (entry: PerformanceEntry) => ((entry as { detail?: { kind?: number } }).detail)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR

/**
 * Bounds how far V8 grows a large heap past its live set, without capping
 * the heap.
 *
 * V8 sets the next full collection's threshold at the live set times a
 * factor it picks from the collector's speed, up to 4 when the process
 * allocates fast. A backfill allocates fast, and its garbage comes in
 * bursts (a range's rows, a commit's literals, a batch of receipts): on the
 * dense bench chain the heap reached twice its live set, and the peak RSS
 * 1.7 times the everyday chain's. `--heap-growing-percent` fixes the
 * factor: at 50 the dense peak fell by a quarter for no measurable CPU.
 * On the everyday chain, whose live set is small, the same bound made full
 * collections frequent and cost ~10% of the backfill's throughput, so it
 * starts once a full collection leaves more than `freeBelowBytes` in use
 * (or the backfill's rows say one will: expectLargeHeap), and holds until
 * one leaves less than half of that: a small heap grows at V8's pace, a
 * large one by `percent` at most (bench/LOG.md). Unlike
 * `--max-old-space-size` it is no limit, so a chain whose ranges truly hold
 * more is never an out-of-memory crash.
 *
 * The flag is not allowed in NODE_OPTIONS; V8 reads it at each collection,
 * so setting it while the process runs takes effect (0 is V8's own factor).
 */
export function limitHeapGrowth(percent: number, freeBelowBytes = FREE_GROWTH_BELOW_BYTES): void {
  if (percent <= 0) return
  const setGrowingPercent = (growing: number) => setFlagsFromString(`--heap-growing-percent=${growing}`)
  // made when first needed: its context is memory a chain that never announces a large heap does without
  let collector: (() => void) | undefined
  const collect = () => (collector ??= fullCollector())()
  const bound = createHeapGrowthBound(percent, freeBelowBytes, setGrowingPercent, collect)
  processBound = bound
  // told shortly after each collection: what is in use then is about what the full collection kept
  const observer = new PerformanceObserver((list) => {
    if (list.getEntries().some(isFullCollection)) bound.collected(getHeapStatistics().used_heap_size)
  })
  observer.observe({ entryTypes: ['gc'] })
}

/** The bound limitHeapGrowth started: V8's flags are the process's, and so is the bound. */
let processBound: HeapGrowthBound | undefined

/**
 * The backfill is about to hold a large live set (a dense chain's rows
 * fetched and waiting for their commit, pipeline/rows-in-flight.ts): the
 * bound starts now rather than after a full collection shows it.
 *
 * A collection sets the threshold of the next one, with the flag as it is
 * then: a bound started by a collection comes one collection late. On the
 * dense bench the main thread's first large collection (seconds into the
 * backfill) set its next threshold at V8's own factor, ~3.5× the 93 MiB it
 * kept: the heap grew to 330 MB before the next, the process's peak
 * (bench/LOG.md, issue 40.5). The rows are known as ranges' blocks come
 * in, and the bound starting then collects at once, so the threshold in force is
 * the bound's from that moment, whenever the last collection was (one full
 * collection of ~100 MB, tens of milliseconds, once a backfill). Nothing
 * happens without limitHeapGrowth (HEAP_GROWTH_PERCENT=0).
 */
export function expectLargeHeap(): void {
  processBound?.expectLarge()
}

export type HeapGrowthBound = ReturnType<typeof createHeapGrowthBound>

/**
 * Whether the heap's growth is bounded, and the flag that says so
 * (`setGrowingPercent`: `percent` bounded, 0 V8's own factor), told of each
 * full collection and of a large backlog coming (then `collect`s, so the
 * next threshold is set under the bound: expectLargeHeap).
 */
export function createHeapGrowthBound(percent: number, freeBelowBytes: number, setGrowingPercent: (growingPercent: number) => void, collect: () => void) {
  let bounded = false
  /**
   * Whether the threshold in force was set under the bound. A collection sets it with the flag as it was when it
   * ran, so the one that starts the bound leaves V8's own: on the dense bench such a collection (114 MiB kept) came
   * half a second before the backlog was announced, and the heap grew to 383 MiB before the next (786 MiB RSS).
   */
  let thresholdBounded = false
  const boundNow = (large: boolean) => {
    if (large === bounded) return
    setGrowingPercent(large ? percent : 0)
    bounded = large
  }
  return {
    /** A full collection left `usedBytes` in use. */
    collected(usedBytes: number) {
      thresholdBounded = bounded
      boundNow(boundAfter(bounded, usedBytes, freeBelowBytes))
    },
    /**
     * A large live set is coming: bounded from now, with a collection unless the threshold in force is already
     * the bound's. The collection it makes is told as any other (`collected`), so a heap that turns out small
     * lets go of the bound as it would have.
     */
    expectLarge() {
      if (bounded && thresholdBounded) return
      boundNow(true)
      collect()
      thresholdBounded = true
    },
    get bounded() {
      return bounded
    },
  }
}

/** Whether the bound holds after a full collection that left `used` bytes in use (it held before: `bounded`). */
export function boundAfter(bounded: boolean, used: number, freeBelowBytes: number): boolean {
  return bounded ? used >= freeBelowBytes * BOUND_HOLDS_ABOVE_SHARE : used > freeBelowBytes
}
