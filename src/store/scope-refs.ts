import type postgres from 'postgres'

/**
 * Exact distinct counts (unique senders) kept as reference counts by scope
 * (`ScopeRefs` in the schema): one row per group — a code's day and sender,
 * a window's sender — holding, per scope key, how many attribution rows are
 * behind the member there. A member counts in a scope while its number is
 * above 0, and each crossing of 0 moves the scope's count by one.
 *
 * One row per group rather than one per scope: a new sender of a code costs
 * one written row instead of four, and a sender entering the rolling windows
 * one instead of eight. The group's row lock serializes concurrent commits
 * and rollbacks of that group, whatever scopes they touch.
 */

type Sql = postgres.Sql | postgres.TransactionSql | postgres.ReservedSql

/** Scope key of a code's sender: its registry namespace and chain, `*` and 0 standing for every one (`canonical|8453`, `*|0`; 0 while kept: every-chain.ts). */
export const CODE_SCOPE_KEY = `registry || '|' || chain_id`
/** Scope key of a window's sender: the chain, 0 for every chain. */
export const CHAIN_SCOPE_KEY = 'scope::text'

/** `t.refs` plus `excluded.refs`, scope by scope: the ON CONFLICT update of a ScopeRefs row. */
export function mergedRefs(sql: Sql) {
  return sql`t.refs || (
    select jsonb_object_agg(key, coalesce((t.refs ->> key)::bigint, 0) + value::bigint) from jsonb_each_text(excluded.refs))`
}

/** Rows whose every scope is at 0 or below: members counted nowhere any more. */
export function countsNowhere(sql: Sql) {
  return sql`not exists (select 1 from jsonb_each_text(refs) as scope where scope.value::bigint > 0)`
}

export type ScopedDistinct = {
  /** Prefix of the CTEs' names. */
  name: string
  /** CTE of deltas: the `rowKeys` columns, the columns `scopeKey` reads, the `groupKeys` columns and `delta`, unique per row and scope. */
  deltas: string
  /** The ScopeRefs table, keyed by `rowKeys`. */
  refs: string
  rowKeys: readonly string[]
  /** SQL over the deltas' columns giving the scope key (CODE_SCOPE_KEY, CHAIN_SCOPE_KEY). */
  scopeKey: string
  /** The counts table, keyed by `groupKeys`, with `senders`. */
  counts: string
  groupKeys: readonly string[]
}

/** The distinct-sender tables of the rolling windows: a window's senders (per chain scope), a code's senders (per registry and chain scope). */
export const WINDOW_SENDER_TABLES = {
  refs: 'window_sender_refs',
  rowKeys: ['window_name', 'sender'],
  scopeKey: CHAIN_SCOPE_KEY,
  counts: 'sender_window_counts',
  groupKeys: ['window_name', 'scope'],
} as const satisfies Omit<ScopedDistinct, 'name' | 'deltas'>

export const WINDOW_CODE_SENDER_TABLES = {
  refs: 'window_code_sender_refs',
  rowKeys: ['window_name', 'code', 'sender'],
  scopeKey: CODE_SCOPE_KEY,
  counts: 'code_sender_window_counts',
  groupKeys: ['window_name', 'code', 'registry', 'chain_id'],
} as const satisfies Omit<ScopedDistinct, 'name' | 'deltas'>

/**
 * CTEs that add the `deltas` CTE to the refs rows (one upsert per group, in
 * key order so concurrent commits lock shared rows in the same order) and
 * move `counts` by every scope crossing 0 — counted against the scope's value
 * before this statement, which is the value the upsert returns minus the
 * delta: each statement sees what the one before it left under the row lock,
 * so no crossing is missed or counted twice.
 */
export function scopedDistinctCtes(sql: Sql, { name, deltas, refs, rowKeys, scopeKey, counts, groupKeys }: ScopedDistinct) {
  // column lists and scope keys are this module's and the store's constants, never input
  const row = sql.unsafe(rowKeys.join(', '))
  const group = sql.unsafe(groupKeys.join(', '))
  const key = sql.unsafe(scopeKey)
  const grouped = sql(`${name}_grouped`)
  const written = sql(`${name}_refs`)
  const becameActive = sql`after > 0 and after - delta <= 0`
  const becameInactive = sql`after <= 0 and after - delta > 0`
  return sql`
    ${grouped} as (
      select ${row}, jsonb_object_agg(${key}, delta) as refs from ${sql(deltas)} group by ${row}
    ),
    ${written} as (
      insert into ${sql(refs)} as t (${row}, refs)
      select ${row}, refs from ${grouped} order by ${row}
      on conflict (${row}) do update set refs = ${mergedRefs(sql)}
      returning ${row}, refs
    ),
    ${sql(`${name}_counts`)} as (
      insert into ${sql(counts)} as t (${group}, senders)
      select ${group}, count(*) filter (where ${becameActive}) - count(*) filter (where ${becameInactive})
      from (select d.*, (r.refs ->> (${key}))::bigint as after from ${sql(deltas)} d join ${written} r using (${row})) as crossed
      group by ${group}
      having count(*) filter (where ${becameActive} or ${becameInactive}) > 0
      order by ${group}
      on conflict (${group}) do update set senders = t.senders + excluded.senders
      returning 1
    )`
}
