import type postgres from 'postgres'
import { EVERY_CHAIN } from '../db/schema/index.js'

/**
 * The every-chain scope (EVERY_CHAIN) of the per code sender tables and the
 * rolling windows, kept only once it differs from one chain's figures
 * (`every_chain_scope` in the schema).
 *
 * While a single chain has aggregates, commits write that chain's scope
 * alone and reads of "every chain" read that chain's rows: the same
 * figures, for a quarter less work per commit. The first commit of a
 * second chain builds the scope once, from the first chain's rows, under
 * the state row's lock, which every commit, rollback and window move holds
 * FOR SHARE while it writes: so no statement writes with a stale idea of
 * the scope, and no row is counted twice or lost.
 */

type Sql = postgres.Sql | postgres.TransactionSql | postgres.ReservedSql

type ScopeState = { kept: boolean; onlyChain: number | null }

/**
 * The state last seen, owned by whoever commits (an IndexStore, index-store.ts):
 * `kept` never goes back, and a statement checks what it assumed (scopeCheck),
 * so a stale memory costs one retry, never a wrong count.
 */
export type EveryChainMemory = { seen: ScopeState | undefined }

export function createEveryChainMemory(): EveryChainMemory {
  return { seen: undefined }
}

async function readState(sql: Sql): Promise<ScopeState> {
  const [row] = await sql<{ kept: boolean; only_chain: number | null }[]>`select kept, only_chain from every_chain_scope where id = 1`
  if (!row) throw new Error('every_chain_scope has no row: run the migrations')
  return { kept: row.kept, onlyChain: row.only_chain }
}

/**
 * Whether a statement writing aggregates of `chainIds` writes the
 * every-chain scope too; makes the state fit them first (claims a fresh
 * database for the only chain, or builds the scope when a second chain
 * comes). The statement then checks the state under its lock (scopeCheck).
 */
export async function writesEveryChain(sql: postgres.Sql, chainIds: readonly number[], memory: EveryChainMemory): Promise<boolean> {
  let state = memory.seen ?? (await readState(sql))
  for (const chainId of new Set(chainIds)) {
    if (state.kept || state.onlyChain === chainId) continue
    if (state.onlyChain === null) {
      await sql`update every_chain_scope set only_chain = ${chainId} where id = 1 and only_chain is null and not kept`
      state = await readState(sql)
      if (state.kept || state.onlyChain === chainId) continue
    }
    // a second chain has aggregates: every chain's figures are no longer one chain's
    await keepEveryChain(sql)
    state = await readState(sql)
  }
  memory.seen = state
  return state.kept
}

/** Whether the every-chain scope is kept, locked FOR SHARE for the rest of `tx` (a rollback, a window move). */
export async function everyChainKeptIn(tx: Sql): Promise<boolean> {
  const [row] = await tx<{ kept: boolean }[]>`select kept from every_chain_scope where id = 1 for share`
  if (!row) throw new Error('every_chain_scope has no row: run the migrations')
  return row.kept
}

/** A statement found the state other than it assumed: read it again next time. */
export function forgetEveryChainState(memory: EveryChainMemory): void {
  memory.seen = undefined
}

/**
 * A CTE named `scope_ok`: one row when the state is what the statement's
 * `writesEveryChain` answer assumed, locked FOR SHARE until the
 * transaction ends (a build of the scope waits for it, and it for a build).
 */
export function scopeCheck(sql: Sql, everyChain: boolean, chainId: number) {
  return sql`
    scope_ok as (
      select 1 from every_chain_scope where id = 1 and kept = ${everyChain} and (kept or only_chain = ${chainId}) for share
    )`
}

/** `(values (<chain column>)[, (0)]) as s(scope)`: the scopes a row of that chain counts in, every chain only when kept. */
export function chainScopes(sql: Sql, chainColumn: string, everyChain: boolean) {
  return sql`(values (${sql(chainColumn)}) ${everyChain ? sql`, (${EVERY_CHAIN}::int)` : sql``}) as s(scope)`
}

/** The scope number the rows of "every chain" are read from now: EVERY_CHAIN once kept, else the only chain's (none yet: EVERY_CHAIN, no rows). */
export function everyChainReadScope(sql: Sql) {
  return sql`(select case when kept then ${EVERY_CHAIN}::int else coalesce(only_chain, ${EVERY_CHAIN}::int) end from every_chain_scope where id = 1)`
}

/**
 * Builds the every-chain scope from the only chain's rows and keeps it from
 * now on, in one transaction that first waits, on the state row, for every
 * statement writing with the old state. The copy is exact: until now one
 * chain had every row, so its figures are every chain's.
 */
async function keepEveryChain(sql: postgres.Sql): Promise<void> {
  await sql.begin(async (tx) => {
    const [state] = await tx<{ kept: boolean; only_chain: number | null }[]>`
      select kept, only_chain from every_chain_scope where id = 1 for update`
    if (!state || state.kept) return
    if (state.only_chain !== null) await copyScope(tx, String(state.only_chain))
    await tx`update every_chain_scope set kept = true where id = 1`
  })
}

async function copyScope(tx: postgres.TransactionSql, chain: string) {
  // scope keys of the code sender refs are `registry|chain`: add `registry|0` beside each of the chain's
  const withEveryChain = tx`refs || coalesce((
    select jsonb_object_agg(split_part(key, '|', 1) || '|' || ${String(EVERY_CHAIN)}, value) from jsonb_each(refs) where split_part(key, '|', 2) = ${chain}), '{}')`
  await tx`update code_day_sender_refs set refs = ${withEveryChain}`
  await tx`update window_code_sender_refs set refs = ${withEveryChain}`
  await tx`update window_sender_refs set refs = refs || jsonb_build_object(${String(EVERY_CHAIN)}::text, refs -> ${chain}) where refs ? ${chain}`
  await tx`
    insert into code_daily_sender_counts (code, registry, chain_id, day, senders)
    select code, registry, ${EVERY_CHAIN}, day, senders from code_daily_sender_counts where chain_id = ${Number(chain)}`
  await tx`
    insert into code_sender_window_counts (window_name, code, registry, chain_id, senders)
    select window_name, code, registry, ${EVERY_CHAIN}, senders from code_sender_window_counts where chain_id = ${Number(chain)}`
  await tx`
    insert into sender_window_counts (window_name, scope, senders)
    select window_name, ${EVERY_CHAIN}, senders from sender_window_counts where scope = ${Number(chain)}`
  await tx`
    insert into code_window_totals (window_name, scope, code, registry, transactions, user_operations, reverted)
    select window_name, ${EVERY_CHAIN}, code, registry, transactions, user_operations, reverted from code_window_totals where scope = ${Number(chain)}`
}
