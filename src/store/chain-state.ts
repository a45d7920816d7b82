import type { Hex } from 'viem'
import type { Sql } from '../db/client.js'

/**
 * The `chain_state` table: per chain, the head the follower last saw (and
 * the genesis hash that identifies the chain).
 */

/** Records the head the follower read from the node. */
export async function recordHead(sql: Sql, chainId: number, number: number, hash: Hex): Promise<void> {
  await sql`
    insert into chain_state (chain_id, head_block, head_hash, updated_at)
    values (${chainId}, ${number}, ${hash}, now())
    on conflict (chain_id) do update set head_block = excluded.head_block, head_hash = excluded.head_hash, updated_at = now()`
}

/** The genesis hash stored for the chain, or undefined before the first start (or in a database older than the column). */
export async function storedGenesis(sql: Sql, chainId: number): Promise<string | undefined> {
  const [row] = await sql<{ genesis_hash: string | null }[]>`select genesis_hash from chain_state where chain_id = ${chainId}`
  return row?.genesis_hash ?? undefined
}

/** Stores the genesis hash that identifies the chain from now on. */
export async function recordGenesis(sql: Sql, chainId: number, genesis: string): Promise<void> {
  await sql`
    insert into chain_state (chain_id, head_block, head_hash, genesis_hash, updated_at)
    values (${chainId}, 0, ${genesis}, ${genesis}, now())
    on conflict (chain_id) do update set genesis_hash = excluded.genesis_hash, updated_at = now()`
}
