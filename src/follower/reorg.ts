import type { Hex } from 'viem'
import type postgres from 'postgres'
import type { Rpc } from '../rpc/client.js'

/** A block whose hash the index has committed to: a range boundary or an indexed block. */
export type KnownPoint = { number: number; hash: Hex }

/** Known points at or below `atOrBelow`, highest first. */
export async function knownPointsBelow(
  sql: postgres.ReservedSql,
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

export type BranchCheck =
  /** The node agrees with the index at its highest common height. */
  | { kind: 'same' }
  /** The node does not have our blocks yet: it lags, which is not a reorg. */
  | { kind: 'behind' }
  /** The node has another block at a height the index committed to. */
  | { kind: 'reorg'; mismatchAt: number }

/**
 * Compares the index's highest known block at or below `height` with the
 * node. Only a hash mismatch is a reorg; a block the node does not have is
 * lag (a lagging RPC node is a known source of false reorgs in indexers).
 */
export async function checkBranch(sql: postgres.ReservedSql, rpc: Rpc, chainId: number, height: number): Promise<BranchCheck> {
  const [point] = await knownPointsBelow(sql, chainId, height, 1)
  if (!point) return { kind: 'same' }
  const header = await rpc.header(point.number)
  if (!header) return { kind: 'behind' }
  return header.hash.toLowerCase() === point.hash.toLowerCase() ? { kind: 'same' } : { kind: 'reorg', mismatchAt: point.number }
}

const WALK_PAGE = 32

/**
 * Walks down the known points from `below` until one matches the node: the
 * common ancestor. A matching hash proves every block beneath it matches too.
 * Returns `floor` when nothing matches (the whole indexed chain was replaced).
 */
export async function findCommonAncestor(
  sql: postgres.ReservedSql,
  rpc: Rpc,
  chainId: number,
  below: number,
  floor: number,
): Promise<number> {
  let cursor = below
  for (;;) {
    const points = await knownPointsBelow(sql, chainId, cursor, WALK_PAGE)
    if (points.length === 0) return floor
    const headers = await rpc.headers(points.map((point) => point.number))
    for (const [i, point] of points.entries()) {
      const header = headers[i]
      if (header && header.hash.toLowerCase() === point.hash.toLowerCase()) return point.number
    }
    cursor = points[points.length - 1]!.number - 1
    if (cursor <= floor) return floor
  }
}

/** The highest range boundary at or below `block`: rollbacks cut the index only at range edges. */
export async function rangeBoundaryAtOrBelow(sql: postgres.ReservedSql, chainId: number, block: number, floor: number): Promise<number> {
  const [row] = await sql<{ to_block: string }[]>`
    select to_block from ranges where chain_id = ${chainId} and to_block <= ${block} order by to_block desc limit 1`
  return row ? Number(row.to_block) : floor
}
