import type postgres from 'postgres'
import type { Logger } from '../logger.js'
import type { IndexerMetrics } from '../metrics/indexer.js'
import type { RawHeader, Rpc } from '../rpc/client.js'
import { sameHash } from '../rpc/objects.js'
import { clearMismatchFlags, firstFlaggedRange, lastRange, rangeBoundaryAtOrBelow, type RangeJob } from '../store/ranges.js'
import { rollbackAbove } from '../store/rollback.js'
import { checkBranch, findCommonAncestor } from './reorg.js'

type Bounds = Pick<RangeJob, 'fromBlock' | 'toBlock'>
type Header = Pick<RawHeader, 'hash'> | null | undefined

/** The blocks that pin a flagged range to its branch: its last block, and the parent of its first (none for block 0). */
export const flaggedRangeBlocks = ({ fromBlock, toBlock }: Bounds): number[] => (fromBlock === 0 ? [toBlock] : [toBlock, fromBlock - 1])

/**
 * What the node's headers of `flaggedRangeBlocks(range)` say about a range a
 * worker flagged: `lag` when the node lacks its last block (leave the flag
 * for later), `same branch` when both hashes match (the worker's node merely
 * served a stale block: clear the flags), otherwise `reorg`.
 */
export function flaggedRangeVerdict(range: RangeJob, [end, start]: readonly Header[]): 'lag' | 'same branch' | 'reorg' {
  if (!end) return 'lag'
  const startMatches = range.fromBlock === 0 || (!!start && sameHash(start.hash, range.parentHash))
  return sameHash(end.hash, range.toHash) && startMatches ? 'same branch' : 'reorg'
}

/** Blocks rolled back: from the planned tip (or the boundary, with no range left) down to the common ancestor. */
export const reorgDepth = ({ tip, boundary, ancestor }: { tip: number | undefined; boundary: number; ancestor: number }) => (tip ?? boundary) - ancestor

/**
 * Keeps the index on the node's branch: re-checks the ranges workers
 * flagged, compares the index's highest known block with the node and, on a
 * reorg, rolls back to the common ancestor's range boundary.
 */
export function createReconciler(options: {
  chainId: number
  /** The block below the start block: where a rollback of everything lands. */
  floor: number
  confirmations: number
  rpc: Rpc
  logger: Logger
  metrics?: IndexerMetrics | undefined
}) {
  const { chainId, floor, confirmations, rpc, logger, metrics } = options

  /** Rolls the index back to the common ancestor at or below `mismatchAt`. */
  async function handleReorg(sql: postgres.ReservedSql, mismatchAt: number, head: number) {
    const ancestor = await findCommonAncestor(sql, rpc, chainId, mismatchAt, floor)
    const boundary = await rangeBoundaryAtOrBelow(sql, chainId, ancestor, floor)
    const tip = await lastRange(sql, chainId)
    const depth = reorgDepth({ tip: tip?.toBlock, boundary, ancestor })
    const details = { ancestor, rollback_to: boundary, depth, head, confirmations }
    if (depth > confirmations) logger.error(details, 'REORG DEEPER THAN THE CONFIRMATION WINDOW: rolling back')
    else logger.warn(details, 'reorg: rolling back')
    const removed = await rollbackAbove(sql, chainId, boundary)
    metrics?.reorg(chainId, depth)
    // info, not warn: each rollback is an event of its own, never folded into a repeat count
    logger.info({ ...details, ...removed }, 'rolled back; re-indexing the new branch')
  }

  /** Re-checks ranges a worker flagged; a node that merely served a stale block is not a reorg. */
  async function checkFlaggedRanges(sql: postgres.ReservedSql, head: number) {
    const flagged = await firstFlaggedRange(sql, chainId)
    if (!flagged) return
    const verdict = flaggedRangeVerdict(flagged, await rpc.headers(flaggedRangeBlocks(flagged)))
    if (verdict === 'same branch') await clearMismatchFlags(sql, chainId)
    else if (verdict === 'reorg') await handleReorg(sql, flagged.toBlock, head)
  }

  /** Returns false when the node lags behind the index's tip (nothing to cut from it yet). */
  return async function reconcile(sql: postgres.ReservedSql, head: number): Promise<boolean> {
    await checkFlaggedRanges(sql, head)
    const check = await checkBranch(sql, rpc, chainId, head)
    if (check.kind === 'reorg') await handleReorg(sql, check.mismatchAt, head)
    return check.kind !== 'behind'
  }
}
