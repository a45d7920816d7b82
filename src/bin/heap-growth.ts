import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks'
import { getHeapStatistics, setFlagsFromString } from 'node:v8'

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
 * starts once a full collection leaves more than `freeBelowBytes` in use,
 * and holds until one leaves less than half of that: a small heap grows at
 * V8's pace, a large one by `percent` at most (bench/LOG.md). Unlike `--max-old-space-size` it is no limit, so a chain
 * whose ranges truly hold more is never an out-of-memory crash.
 *
 * The flag is not allowed in NODE_OPTIONS; V8 reads it at each collection,
 * so setting it while the process runs takes effect (0 is V8's own factor).
 */
export function limitHeapGrowth(percent: number, freeBelowBytes = FREE_GROWTH_BELOW_BYTES): void {
  if (percent <= 0) return
  let bounded = false
  // told shortly after each collection: what is in use then is about what the full collection kept
  const observer = new PerformanceObserver((list) => {
    if (!list.getEntries().some(isFullCollection)) return
    const large = boundAfter(bounded, getHeapStatistics().used_heap_size, freeBelowBytes)
    if (large === bounded) return
    setFlagsFromString(`--heap-growing-percent=${large ? percent : 0}`)
    bounded = large
  })
  observer.observe({ entryTypes: ['gc'] })
}

/** Whether the bound holds after a full collection that left `used` bytes in use (it held before: `bounded`). */
export function boundAfter(bounded: boolean, used: number, freeBelowBytes: number): boolean {
  return bounded ? used >= freeBelowBytes * BOUND_HOLDS_ABOVE_SHARE : used > freeBelowBytes
}
