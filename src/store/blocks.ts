import type { Hex } from 'viem'
import type { Sql } from '../db/client.js'

/**
 * The `blocks` table: the hashes of indexed blocks, which the follower's
 * reorg checks compare with the node. The commit writes them, a rollback
 * deletes those above the ancestor, and pruning drops the old ones.
 */

/** Deletes the stored blocks of chain `chainId` below block `below`. */
export async function pruneBlocks(sql: Sql, chainId: number, below: number): Promise<void> {
  await sql`delete from blocks where chain_id = ${chainId} and number < ${below}`
}

/** A block whose hash the index has committed to: a range boundary or an indexed block. */
export type KnownPoint = { number: number; hash: Hex }

/** Known points at or below `atOrBelow`, highest first. */
export async function knownPointsBelow(
  sql: Sql,
  chainId: number,
  atOrBelow: number,
  limit: number,
): Promise<KnownPoint[]> {
  const rows = await sql<{ number: string; hash: Hex }[]>`
    select number, hash from (
      select to_block as number, to_hash as hash from ranges where chain_id = ${chainId} and to_block <= ${atOrBelow}
      union
      select from_block - 1, parent_hash from ranges where chain_id = ${chainId} and from_block > 0 and from_block - 1 <= ${atOrBelow}
      union
      select number, hash from blocks where chain_id = ${chainId} and number <= ${atOrBelow}
    ) points
    order by number desc
    limit ${limit}`
  return rows.map((row) => ({ number: Number(row.number), hash: row.hash }))
}
