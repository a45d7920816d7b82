import { and, eq } from 'drizzle-orm'
import type { Hex } from 'viem'
import { decodeAttribution } from '../attribution/decode.js'
import type { Database } from '../db/client.js'
import { attributions } from '../db/schema/index.js'
import type { Finding, HashType } from './result.js'

/**
 * The indexed attribution of a transaction's own suffix or of a
 * UserOperation, or undefined when the index does not hold the hash (it
 * stores attributed ones only, so anything else is asked of the chain).
 *
 * Rows are one per code; any row of the hash carries the whole suffix, and
 * decoding that suffix again gives back every code with its role, exactly
 * as the indexer decoded it.
 */
export async function findIndexed(db: Database, query: { type: HashType; hash: Hex; chainId: number }): Promise<Finding | undefined> {
  const match =
    query.type === 'transaction'
      ? and(eq(attributions.chainId, query.chainId), eq(attributions.txHash, query.hash), eq(attributions.userOpIndex, -1))
      : and(eq(attributions.chainId, query.chainId), eq(attributions.userOpHash, query.hash))
  const [row] = await db
    .select({
      blockNumber: attributions.blockNumber,
      txHash: attributions.txHash,
      userOpHash: attributions.userOpHash,
      status: attributions.status,
      suffix: attributions.suffix,
    })
    .from(attributions)
    .where(match)
    .limit(1)
  if (!row) return undefined
  const decoded = decodeAttribution(row.suffix)
  const finding: Finding = {
    source: 'index',
    type: query.type,
    hash: query.hash,
    chainId: query.chainId,
    transactionHash: row.txHash as Hex,
    blockNumber: row.blockNumber,
    status: row.status,
    decoded: decoded.kind === 'none' ? undefined : decoded,
  }
  if (row.userOpHash) finding.userOpHash = row.userOpHash as Hex
  return finding
}
