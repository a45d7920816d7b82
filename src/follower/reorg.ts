import type postgres from 'postgres'
import type { Rpc } from '../rpc/client.js'
import { sameHash } from '../rpc/objects.js'
import { knownPointsBelow } from '../store/blocks.js'

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
  return checkBranchAt(rpc, point)
}

/** The node's head as the tick read it: its hash and its parent's. */
export type HeadHeader = { number: number; hash: string; parentHash: string }

/** The node's hash at `number` as its head header tells it (the head itself, or its parent), else undefined. */
export function hashFromHead(head: HeadHeader | undefined, number: number): string | undefined {
  if (head?.number === number) return head.hash
  if (head?.number === number + 1) return head.parentHash
  return undefined
}

/**
 * checkBranch at a known point already read (knownPointsBelow(…, height, 1));
 * none: nothing to compare. At the tip the point is the head or its parent
 * (the last range cut ends there), whose hashes the head header the tick
 * read already holds: when they agree, no round trip to the node. A
 * disagreement is asked of the node itself before it is called a reorg: a
 * head header is one answer, and a lagging or load-balanced node's may not
 * match the blocks it serves.
 */
export async function checkBranchAt(rpc: Pick<Rpc, 'header'>, point: { number: number; hash: string } | undefined, head?: HeadHeader): Promise<BranchCheck> {
  if (!point) return { kind: 'same' }
  const fromHead = hashFromHead(head, point.number)
  if (fromHead !== undefined && sameHash(fromHead, point.hash)) return { kind: 'same' }
  const header = await rpc.header(point.number)
  if (!header) return { kind: 'behind' }
  return sameHash(header.hash, point.hash) ? { kind: 'same' } : { kind: 'reorg', mismatchAt: point.number }
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
      if (header && sameHash(header.hash, point.hash)) return point.number
    }
    cursor = points[points.length - 1]!.number - 1
    if (cursor <= floor) return floor
  }
}
