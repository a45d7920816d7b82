/**
 * What one endpoint delivered, measured in the pool's own layer (above the
 * transport, whose internals are its own business): items (blocks, receipts,
 * headers) and answer bytes delivered, failed works, and the time the
 * endpoint had work outstanding. Throughput is items per *busy* second, so
 * an endpoint that was given little work is not judged slow for it: the
 * router needs what an endpoint can do, not what it was asked to do.
 *
 * Counts are kept in short windows; the estimate blends each closed window
 * into a moving average, so it follows a node that gets slower or faster
 * within a few windows.
 */

const WINDOW_MS = 2_000
/** Weight of the newest window in the moving average. */
const BLEND = 0.4
/** Busy time a window needs before its rates count. */
const MEASURED_BUSY_MS = 50

export type MeterReading = {
  /** Items per busy second (moving average); undefined until a window with 50 ms of work closed. */
  itemsPerSecond: number | undefined
  bytesPerSecond: number | undefined
  /** Totals since start. */
  items: number
  bytes: number
  errors: number
  /** Works outstanding now. */
  outstanding: number
}

export function createEndpointMeter(now: () => number = Date.now) {
  let windowStart = now()
  let windowItems = 0
  let windowBytes = 0
  let windowBusyMs = 0
  let busySince: number | undefined
  let outstanding = 0
  let itemsPerSecond: number | undefined
  let bytesPerSecond: number | undefined
  const totals = { items: 0, bytes: 0, errors: 0 }

  const blend = (old: number | undefined, fresh: number) => (old === undefined ? fresh : old * (1 - BLEND) + fresh * BLEND)

  /**
   * Closes the window when it is over: its busy time counted up to now, its
   * rates blended in. A window with too little work to say anything about
   * speed (a single header in 2 s) stays open and gathers more: at a
   * chain's head, a block a second fetched in a few milliseconds, a 2 s
   * window never held 50 ms of work and the endpoint showed no throughput
   * at all.
   */
  function roll(at: number) {
    if (at - windowStart < WINDOW_MS) return
    if (busySince !== undefined) {
      windowBusyMs += at - busySince
      busySince = at
    }
    if (windowBusyMs < MEASURED_BUSY_MS || windowItems === 0) return
    itemsPerSecond = blend(itemsPerSecond, (windowItems * 1000) / windowBusyMs)
    bytesPerSecond = blend(bytesPerSecond, (windowBytes * 1000) / windowBusyMs)
    windowStart = at
    windowItems = 0
    windowBytes = 0
    windowBusyMs = 0
  }

  return {
    /** A work goes out; `finished` when it ends. */
    started(): void {
      const at = now()
      roll(at)
      if (outstanding++ === 0) busySince = at
    },
    finished(result: { items: number; bytes?: number } | 'failed'): void {
      const at = now()
      // the work's items count in the window its busy time ends in
      if (result === 'failed') totals.errors++
      else {
        windowItems += result.items
        windowBytes += result.bytes ?? 0
        totals.items += result.items
        totals.bytes += result.bytes ?? 0
      }
      if (--outstanding === 0 && busySince !== undefined) {
        windowBusyMs += at - busySince
        busySince = undefined
      }
      roll(at)
    },
    /** Answer bytes seen by a reader (counted with the work that carried them). */
    bytes(count: number): void {
      windowBytes += count
      totals.bytes += count
    },
    read(): MeterReading {
      roll(now())
      return { itemsPerSecond, bytesPerSecond, ...totals, outstanding }
    },
  }
}

export type EndpointMeter = ReturnType<typeof createEndpointMeter>
