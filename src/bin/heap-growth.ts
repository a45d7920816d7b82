import { setFlagsFromString } from 'node:v8'

/**
 * Caps how far V8 grows the heap past the live set, without capping the heap.
 *
 * V8 sets the next full collection's threshold at the live set times a
 * factor it picks from the collector's speed, up to 4 when the process
 * allocates fast. A backfill allocates fast, and its garbage comes in
 * bursts (a range's rows, a commit's literals, a batch of receipts): on the
 * dense bench chain the heap then reached twice its live set, and the peak
 * RSS 1.7 times the everyday chain's. `--heap-growing-percent` fixes the
 * factor: at 50 the dense peak fell by a quarter for no measurable CPU
 * (BENCHMARKS.md). Unlike `--max-old-space-size` it is no limit, so a
 * chain whose ranges truly hold more is never an out-of-memory crash.
 *
 * The flag is not allowed in NODE_OPTIONS; V8 reads it at each collection,
 * so setting it at start-up, before the daemon allocates, takes effect.
 */
export function limitHeapGrowth(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`)
}
