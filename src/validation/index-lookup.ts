import type { Hex } from 'viem'
import { decodeAttribution } from '../attribution/decode.js'
import type { Database } from '../db/client.js'
import { findAttributionByHash } from '../store/attributions.js'
import type { Finding, HashType } from './result.js'

/**
 * The indexed attribution of a transaction's own suffix or of a
 * UserOperation, or undefined when the index does not hold the hash (it
 * stores attributed ones only, so anything else is asked of the chain).
 *
 * The suffix (stored once per transaction or UserOperation), decoded
 * again, gives back every code with its role, exactly as the indexer
 * decoded it.
 */
export async function findIndexed(db: Database, query: { type: HashType; hash: Hex; chainId: number }): Promise<Finding | undefined> {
  const row = await findAttributionByHash(db, query)
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
