import type { Hex } from 'viem'
import { decodeAttribution } from '../attribution/decode.js'
import type { Sql } from '../db/connect.js'
import type { Finding, HashType } from './result.js'

type IndexedRow = { block_number: string; tx_hash: string; user_op_hash: string | null; status: 'success' | 'reverted'; suffix: string }

/**
 * Any indexed row of a transaction's own suffix (user_op_index -1), or of a UserOperation, with its
 * suffix (stored once per transaction or UserOperation, in attribution_suffixes).
 *
 * Plain SQL through the driver, not drizzle, unlike the store's reads: `attribution validate` then
 * starts without drizzle and the schema (over a hundred modules, most of that command's start). The
 * API answers through it as well, so its tests cover the command's query.
 */
async function indexedRow(sql: Sql, query: { type: HashType; hash: Hex; chainId: number }): Promise<IndexedRow | undefined> {
  // a transaction's suffix row is found by its hash (its key), its rows by the block it names (theirs); a
  // UserOperation's rows by its hash (their partial index), its suffix by theirs
  const match =
    query.type === 'transaction'
      ? sql`s.chain_id = ${query.chainId} and s.tx_hash = ${query.hash} and s.user_op_index = -1`
      : sql`a.chain_id = ${query.chainId} and a.user_op_hash = ${query.hash}`
  const [row] = await sql<IndexedRow[]>`
    select a.block_number, a.tx_hash, a.user_op_hash, a.status, s.suffix
    from attributions a
    join attribution_suffixes s
      on s.chain_id = a.chain_id and s.block_number = a.block_number and s.tx_hash = a.tx_hash and s.user_op_index = a.user_op_index
    where ${match}
    limit 1`
  return row
}

/**
 * The indexed attribution of a transaction's own suffix or of a
 * UserOperation, or undefined when the index does not hold the hash (it
 * stores attributed ones only, so anything else is asked of the chain).
 *
 * The suffix, decoded again, gives back every code with its role, exactly
 * as the indexer decoded it.
 */
export async function findIndexed(sql: Sql, query: { type: HashType; hash: Hex; chainId: number }): Promise<Finding | undefined> {
  const row = await indexedRow(sql, query)
  if (!row) return undefined
  const decoded = decodeAttribution(row.suffix)
  const finding: Finding = {
    source: 'index',
    type: query.type,
    hash: query.hash,
    chainId: query.chainId,
    transactionHash: row.tx_hash as Hex,
    // int8 arrives as text; block numbers are far below 2^53
    blockNumber: Number(row.block_number),
    status: row.status,
    decoded: decoded.kind === 'none' ? undefined : decoded,
  }
  if (row.user_op_hash) finding.userOpHash = row.user_op_hash as Hex
  return finding
}
