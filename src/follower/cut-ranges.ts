import { zeroHash, type Hex } from 'viem'
import type { IndexerMetrics } from '../metrics/indexer.js'
import { enqueueRanges, type RangeQueue } from '../pipeline/queue.js'
import type { RawHeader, Rpc } from '../rpc/client.js'
import { countPending, insertRanges, lastRange, type RangeJob } from '../store/ranges.js'
import { assertLockHeld, type ChainLock } from './lock.js'

/** Range boundaries fetched per tick: bounds one tick's work while backfilling. */
export const MAX_NEW_RANGES_PER_TICK = 100

export type Bounds = { from: number; to: number }

/** How many new ranges may be cut now: what MAX_PENDING_RANGES leaves, at most MAX_NEW_RANGES_PER_TICK (may be 0 or less). */
export const roomFor = (pending: number, maxPendingRanges: number) => Math.min(MAX_NEW_RANGES_PER_TICK, maxPendingRanges - pending)

/** Bounds of up to `room` ranges of `rangeSize` blocks from `next` through `target` (the last one may be shorter). */
export function planRanges({ next, target, rangeSize, room }: { next: number; target: number; rangeSize: number; room: number }): Bounds[] {
  const bounds: Bounds[] = []
  for (let from = next; from <= target && bounds.length < room; from += rangeSize) {
    bounds.push({ from, to: Math.min(from + rangeSize - 1, target) })
  }
  return bounds
}

/**
 * Range jobs for `bounds`, chained by hash from `parentHash`, given the
 * headers of each range's last block. A node that lacks one (load-balanced,
 * lagging) cuts the list there: the rest is cut on a later tick.
 */
export function jobsFromHeaders(
  bounds: readonly Bounds[],
  headers: ReadonlyArray<Pick<RawHeader, 'hash'> | null | undefined>,
  parentHash: Hex,
  chainId: number,
): RangeJob[] {
  const jobs: RangeJob[] = []
  let parent = parentHash
  for (const [i, { from, to }] of bounds.entries()) {
    const header = headers[i]
    if (!header) break
    jobs.push({ chainId, fromBlock: from, toBlock: to, parentHash: parent, toHash: header.hash })
    parent = header.hash
  }
  return jobs
}

/** Whether more could be cut right away: every planned range was cut and the last ends below the target. */
export function moreToCut(jobs: readonly RangeJob[], bounds: readonly Bounds[], target: number): boolean {
  const last = jobs.at(-1)
  return jobs.length === bounds.length && last !== undefined && last.toBlock < target
}

/** The hash of block `block - 1` (zeros for block 0), or undefined when the node lacks it. */
export async function parentHashOf(rpc: Pick<Rpc, 'header'>, block: number): Promise<Hex | undefined> {
  if (block === 0) return zeroHash
  const header = await rpc.header(block - 1)
  return header?.hash
}

/** The headers of `numbers`, the one of `head` (if among them) as already read: at the head, no round trip to the node. */
export async function headersOf(rpc: Pick<Rpc, 'headers'>, numbers: readonly number[], head?: { number: number; hash: Hex }): Promise<Array<Pick<RawHeader, 'hash'> | null>> {
  const asked = numbers.filter((number) => number !== head?.number)
  const answers = asked.length > 0 ? await rpc.headers(asked) : []
  let next = 0
  return numbers.map((number) => (number === head?.number ? { hash: head.hash } : (answers[next++] ?? null)))
}

/** What one call of the cutter did: whether more could be cut at once, the jobs it cut, and how long cutting and enqueueing took (ms). */
export type Cut = { more: boolean; jobs: readonly RangeJob[]; cutMs: number; enqueueMs: number }

const NOTHING_CUT: Cut = { more: false, jobs: [], cutMs: 0, enqueueMs: 0 }

/**
 * Cuts new ranges up to the target into `ranges` and enqueues them, unless
 * too many wait already (backpressure).
 */
export function createRangeCutter(options: {
  chainId: number
  startBlock: number
  rangeSize: number
  maxPendingRanges: number
  rpc: Rpc
  queue: RangeQueue
  metrics?: IndexerMetrics | undefined
}) {
  const { chainId, rpc, queue, metrics } = options

  /** `head`: the header the tick read, whose hash a range ending at the head takes without asking the node again. */
  return async function cutRanges(lock: ChainLock, target: number, head?: { number: number; hash: Hex }): Promise<Cut> {
    const startedAt = performance.now()
    // the reads and the lock's check in one round trip (pipelined on the lock's session, checked before anything
    // is written): at the head each tick cuts, so the tip is read anyway
    const [pending, tip] = await Promise.all([countPending(lock.sql, chainId), lastRange(lock.sql, chainId), assertLockHeld(lock, chainId)])
    metrics?.pendingRanges(chainId, pending)
    const room = roomFor(pending, options.maxPendingRanges)
    if (room <= 0) return NOTHING_CUT
    const next = tip ? tip.toBlock + 1 : options.startBlock
    if (next > target) return NOTHING_CUT

    const bounds = planRanges({ next, target, rangeSize: options.rangeSize, room })
    const parentHash = tip ? tip.toHash : await parentHashOf(rpc, next)
    if (!parentHash) return NOTHING_CUT
    const jobs = jobsFromHeaders(bounds, await headersOf(rpc, bounds.map((b) => b.to), head), parentHash, chainId)
    await insertRanges(lock.sql, jobs)
    const cutAt = performance.now()
    await enqueueRanges(queue, jobs)
    return { more: moreToCut(jobs, bounds, target), jobs, cutMs: cutAt - startedAt, enqueueMs: performance.now() - cutAt }
  }
}
