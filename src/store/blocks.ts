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

/**
 * Known points at or below `atOrBelow`, highest first. The follower asks
 * at every head, and `ranges` keeps a row per range for ever (one per block
 * at the tip, ~800k after a Base-sized backfill): each source is read
 * backwards from `atOrBelow` through its key and cut at `limit` before the
 * union, which then dedupes a few rows instead of every range (458 ms at
 * 400k ranges before, 1 ms after, bench/LOG.md). Ranges never overlap, so
 * their order by `from_block` (the key) is their order by `to_block`, and a
 * range ending at or below a block starts there too: the key's bound, where
 * the scan starts however deep the reorg walk's cursor.
 */
export async function knownPointsBelow(
  sql: Sql,
  chainId: number,
  atOrBelow: number,
  limit: number,
): Promise<KnownPoint[]> {
  const rows = await sql<{ number: string; hash: Hex }[]>`
    select number, hash from (
      (select to_block as number, to_hash as hash from ranges
       where chain_id = ${chainId} and from_block <= ${atOrBelow} and to_block <= ${atOrBelow} order by from_block desc limit ${limit})
      union
      (select from_block - 1, parent_hash from ranges
       where chain_id = ${chainId} and from_block > 0 and from_block <= ${atOrBelow + 1} order by from_block desc limit ${limit})
      union
      (select number, hash from blocks where chain_id = ${chainId} and number <= ${atOrBelow} order by number desc limit ${limit})
    ) points
    order by number desc
    limit ${limit}`
  return rows.map((row) => ({ number: Number(row.number), hash: row.hash }))
}
