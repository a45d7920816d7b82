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

/** The highest block the bulk path committed (no rollback may reach below it), or undefined. */
export async function finalThrough(sql: Sql, chainId: number): Promise<number | undefined> {
  const [row] = await sql<{ final_through: number | null }[]>`select final_through::float8 as final_through from chain_finality where chain_id = ${chainId}`
  return row?.final_through ?? undefined
}

/** Records a refused rollback (kept until the node agrees with the index again); true when it is new. */
export async function recordRefusedRollback(sql: Sql, chainId: number, rollbackTo: number): Promise<boolean> {
  const rows = await sql`
    update chain_state set refused_rollback_to = ${rollbackTo}, refused_since = coalesce(refused_since, now())
    where chain_id = ${chainId} and refused_rollback_to is distinct from ${rollbackTo}
    returning 1`
  return rows.length > 0
}

/** Clears a refused rollback; true when there was one. */
export async function clearRefusedRollback(sql: Sql, chainId: number): Promise<boolean> {
  const rows = await sql`
    update chain_state set refused_rollback_to = null, refused_since = null where chain_id = ${chainId} and refused_rollback_to is not null
    returning 1`
  return rows.length > 0
}

export type RefusedRollback = { chainId: number; rollbackTo: number; finalThrough: number; since: Date }

/** Every chain whose follower refuses a reorg below its final rows (/readyz). */
export async function refusedRollbacks(sql: Sql): Promise<RefusedRollback[]> {
  const rows = await sql<Array<Omit<RefusedRollback, 'since'> & { sinceMs: number }>>`
    select s.chain_id as "chainId", s.refused_rollback_to::float8 as "rollbackTo", coalesce(f.final_through, -1)::float8 as "finalThrough",
      (extract(epoch from s.refused_since) * 1000)::float8 as "sinceMs"
    from chain_state s left join chain_finality f using (chain_id) where s.refused_rollback_to is not null order by s.chain_id`
  return rows.map(({ sinceMs, ...refused }) => ({ ...refused, since: new Date(sinceMs) }))
}
