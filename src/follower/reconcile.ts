import type postgres from 'postgres'
import type { Logger } from '../logger.js'
import type { IndexerMetrics } from '../metrics/indexer.js'
import type { RawHeader, Rpc } from '../rpc/client.js'
import { sameHash } from '../rpc/objects.js'
import { clearMismatchFlags, firstFlaggedRange, lastRange, rangeBoundaryAtOrBelow, type RangeJob } from '../store/ranges.js'
import { clearRefusedRollback, finalThrough, recordRefusedRollback } from '../store/chain-state.js'
import { rollbackAbove } from '../store/rollback.js'
import { checkBranch, checkBranchAt, findCommonAncestor, type HeadHeader } from './reorg.js'
import { knownPointsBelow } from '../store/blocks.js'

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

  /**
   * Whether chain_state may hold a refused reorg to clear: unknown at first (another follower may have left one),
   * then known from what this one recorded and cleared, so that a tick at the head does not write it in vain.
   */
  let refusalMayBeRecorded = true


  /**
   * Rolls the index back to the common ancestor at or below `mismatchAt`;
   * false when that would reach below the blocks committed as final, whose
   * rows cannot be taken out (store/final-refs.ts): the reorg is refused,
   * loudly, and nothing is rolled back or cut until the node agrees with
   * the index again (a node serving a wrong branch) or an operator acts.
   */
  async function handleReorg(sql: postgres.ReservedSql, mismatchAt: number, head: number): Promise<boolean> {
    const ancestor = await findCommonAncestor(sql, rpc, chainId, mismatchAt, floor)
    const boundary = await rangeBoundaryAtOrBelow(sql, chainId, ancestor, floor)
    const tip = await lastRange(sql, chainId)
    const depth = reorgDepth({ tip: tip?.toBlock, boundary, ancestor })
    const details = { ancestor, rollback_to: boundary, depth, head, confirmations }
    const final = await finalThrough(sql, chainId)
    if (final !== undefined && boundary < final) {
      metrics?.reorgRefused(chainId, true)
      refusalMayBeRecorded = true
      if (await recordRefusedRollback(sql, chainId, boundary))
        logger.error(
          { ...details, final_through: final },
          'REORG BELOW FINALIZED BLOCKS REFUSED: the node serves another branch below blocks committed as final; nothing is rolled back or indexed on this chain until the node agrees with the index again (check the node; see /readyz)',
        )
      return false
    }
    if (depth > confirmations) logger.error(details, 'REORG DEEPER THAN THE CONFIRMATION WINDOW: rolling back')
    else logger.warn(details, 'reorg: rolling back')
    const removed = await rollbackAbove(sql, chainId, boundary)
    metrics?.reorg(chainId, depth)
    // info, not warn: each rollback is an event of its own, never folded into a repeat count
    logger.info({ ...details, ...removed }, 'rolled back; re-indexing the new branch')
    return true
  }

  /** Re-checks ranges a worker flagged; a node that merely served a stale block is not a reorg. False when a reorg was refused. */
  async function checkFlaggedRanges(sql: postgres.ReservedSql, head: number, flagged: RangeJob | undefined): Promise<boolean> {
    if (!flagged) return true
    const verdict = flaggedRangeVerdict(flagged, await rpc.headers(flaggedRangeBlocks(flagged)))
    if (verdict === 'same branch') await clearMismatchFlags(sql, chainId)
    else if (verdict === 'reorg') return handleReorg(sql, flagged.toBlock, head)
    return true
  }

  /**
   * Returns false when the node lags behind the index's tip (nothing to cut from it yet), or a reorg is refused.
   * `headHeader`: the head the tick read, whose hashes spare asking the node for the index's tip at the head.
   */
  async function reconcile(sql: postgres.ReservedSql, head: number, headHeader?: HeadHeader): Promise<boolean> {
    // the flagged range and the index's highest point at or below the head, read in one round trip (pipelined)
    const [flagged, [point]] = await Promise.all([firstFlaggedRange(sql, chainId), knownPointsBelow(sql, chainId, head, 1)])
    if (!(await checkFlaggedRanges(sql, head, flagged))) return false
    // a flagged range's check may have rolled back or cleared: the point is read again then
    const check = flagged ? await checkBranch(sql, rpc, chainId, head) : await checkBranchAt(rpc, point, headHeader)
    if (check.kind === 'reorg') return handleReorg(sql, check.mismatchAt, head)
    if (check.kind !== 'same' || !refusalMayBeRecorded) return check.kind !== 'behind'
    const cleared = await clearRefusedRollback(sql, chainId)
    refusalMayBeRecorded = false
    if (cleared) {
      metrics?.reorgRefused(chainId, false)
      logger.warn('the node agrees with the index again: the refused reorg is over, indexing resumes')
    }
    return true
  }

  /** The chain lock was taken (again): another follower may have recorded a refused reorg meanwhile. */
  const lockTaken = () => {
    refusalMayBeRecorded = true
  }
  return Object.assign(reconcile, { lockTaken })
}
