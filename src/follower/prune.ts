import type postgres from 'postgres'
import { pruneBlocks } from '../store/blocks.js'
import { pruneAttributionEvents } from '../store/events.js'
import { indexedThrough } from '../store/ranges.js'

/** Stored blocks kept below the checkpoint for the reorg checks: four confirmation windows, at least 256. */
export const blocksKept = (confirmations: number) => Math.max(256, confirmations * 4)

/** The lowest stored block kept with the index checkpointed `through`; undefined while nothing is indexed. */
export const pruneBelow = (through: number | undefined, confirmations: number) => (through === undefined ? undefined : through - blocksKept(confirmations))

/** Drops stored blocks far below the checkpoint, and stream events past their retention. */
export async function prune(sql: postgres.ReservedSql, chainId: number, confirmations: number): Promise<void> {
  const below = pruneBelow(await indexedThrough(sql, chainId), confirmations)
  if (below === undefined) return
  await pruneBlocks(sql, chainId, below)
  // every chain's follower prunes every chain's old events: the same statement, harmless twice
  await pruneAttributionEvents(sql)
}
