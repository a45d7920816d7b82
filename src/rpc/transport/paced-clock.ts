import type { OperatingPointSearch } from './operating-point.js'

/**
 * The clock the operating-point search measures on, and what it measures:
 * the paced calls (full blocks) alone, on a clock that runs only while one
 * of them is waited for, in line for a slot or out.
 *
 * A backfill asks in bursts (a range's blocks, then its receipts and
 * commit): time with no block asked says nothing of the node, and a window
 * of receipts answers (a few kilobytes for a round trip each) read as a
 * node twenty times slower. Time in line counts: with fewer requests in
 * flight a block waits longer for its slot, and a clock that ran only
 * while one was out would read that point as no slower.
 */
export function createPacedClock(search: OperatingPointSearch, onMove: () => void, now: () => number = () => performance.now()) {
  const paced = { waited: 0, since: 0, ms: 0 }
  const pacedNow = () => paced.ms + (paced.waited > 0 ? now() - paced.since : 0)

  /** Paced requests out, per the point (`epoch`) they were sent under: a window opens once none of an earlier point is. */
  const pacedOut = new Map<number, number>()
  const earlierOut = (epoch: number) => {
    let out = 0
    for (const [sentEpoch, count] of pacedOut) if (sentEpoch < epoch) out += count
    return out
  }

  return {
    /** `request` (a paced call's wait for a slot and its exchange), with the clock running while it is waited for. */
    async whileWaited<R>(request: () => Promise<R>): Promise<R> {
      if (paced.waited++ === 0) paced.since = now()
      try {
        return await request()
      } finally {
        if (--paced.waited === 0) paced.ms += now() - paced.since
      }
    },

    /** `request`, counted out under `epoch` while it is (paced calls only). */
    async countedOut<R>(isPaced: boolean | undefined, epoch: number, request: () => Promise<R>): Promise<R> {
      if (!isPaced) return request()
      pacedOut.set(epoch, (pacedOut.get(epoch) ?? 0) + 1)
      try {
        return await request()
      } finally {
        const left = pacedOut.get(epoch)! - 1
        if (left === 0) pacedOut.delete(epoch)
        else pacedOut.set(epoch, left)
      }
    },

    /** A paced answer delivered `calls` calls in `bytes`, to a request sent under `epoch`: the search's measure; `onMove` when the point moved. */
    measure(epoch: number, calls: number, bytes: number) {
      const at = pacedNow()
      search.answered(epoch, calls, bytes, at, earlierOut(search.epoch))
      if (search.tick(at)) onMove()
    },
  }
}
