import type postgres from 'postgres'
import { EVERY_CHAIN } from '../db/schema/index.js'
import { HOURLY_TOTALS_DAYS } from './buckets.js'
import { chainScopes } from './every-chain.js'
import { ATTRIBUTION_EVENTS_CHANNEL } from './events.js'
import { CODE_SCOPE_KEY, scopedDistinctCtes, WINDOW_CODE_SENDER_TABLES, WINDOW_SENDER_TABLES } from './scope-refs.js'

/**
 * The aggregates of attribution rows, as data-modifying CTEs of the one
 * statement that inserts (commit.ts) or deletes (a rollback) the rows: the
 * totals, unique senders, rolling windows and stream events move in the
 * same transaction as the rows, by exactly the rows moved.
 */

type Sql = postgres.Sql | postgres.TransactionSql | postgres.ReservedSql

/**
 * What the stream's events name: the kind of change, and a CTE of the block
 * ranges it covers (`chain_id, from_block, to_block`; `to_block` null for a
 * rollback, everything from `from_block` up).
 */
export type EventRanges = { type: 'commit' | 'rollback'; ranges: string }

/** The registry namespace of an attribution row (its columns, unqualified), as every aggregate names it. */
export const registryOfRow = (sql: Sql) =>
  sql`case when registry_address is null then 'canonical' else registry_chain_id::text || ':' || lower(registry_address) end`

/**
 * Everything the attribution rows in the CTE `rows` move (inserted, or
 * deleted with `sign` -1), as data-modifying CTEs of the statement that
 * inserts or deletes them — so the aggregates change in the same transaction
 * as the rows, exactly once:
 * - per code × registry namespace × chain × UTC day (and hour) × kind totals;
 * - per chain × day (and hour) × kind: attribution rows and distinct
 *   successful / failed transactions and UserOperations;
 * - exact unique senders per code × day (with its distinct count per day,
 *   per chain and registry, for any registry, and for every chain while
 *   `everyChain` is kept: scope-refs.ts, every-chain.ts) and per chain × day,
 *   as reference counts (a sender with 0 attributions left counts no more);
 * - the rolling windows (leaderboard, active codes, unique senders);
 * - one stream event per range and code, and a notification (sent on commit)
 *   per range naming them.
 * Rows are upserted in key order so concurrent commits take the shared rows'
 * locks in the same order and wait for each other instead of deadlocking.
 */
export function aggregateCtes(sql: Sql, rows: string, sign: 1 | -1, event: EventRanges, everyChain: boolean) {
  const bucketedRows = sql`
    buckets as (
      select code, chain_id, block_number, kind, status, suffix_gas, sender, tx_hash || ':' || user_op_index as item,
        ${registryOfRow(sql)} as registry,
        (block_timestamp at time zone 'UTC')::date as day,
        date_trunc('hour', block_timestamp, 'UTC') as hour
      from ${sql(rows)}
    )`
  // days are kept forever, hours only while an hourly read may look at them (buckets.ts)
  const keptBuckets = (bucket: 'day' | 'hour') =>
    bucket === 'day' ? sql`` : sql`where hour >= date_trunc('hour', now()) - ${HOURLY_TOTALS_DAYS} * interval '1 day'`
  const codeTotals = (cte: string, table: string, bucket: 'day' | 'hour') => sql`
    ${sql(cte)} as (
      insert into ${sql(table)} as t (code, registry, chain_id, ${sql(bucket)}, kind, success_count, reverted_count, suffix_gas)
      select code, registry, chain_id, ${sql(bucket)}, kind,
             ${sign} * count(*) filter (where status = 'success'), ${sign} * count(*) filter (where status = 'reverted'), ${sign} * sum(suffix_gas)
      from buckets ${keptBuckets(bucket)} group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5
      on conflict (code, registry, chain_id, ${sql(bucket)}, kind) do update set
        success_count = t.success_count + excluded.success_count,
        reverted_count = t.reverted_count + excluded.reverted_count,
        suffix_gas = t.suffix_gas + excluded.suffix_gas
      returning 1
    )`
  // a transaction is wholly inside one range, so its rows (one per code) are all in `rows`: distinct items are exact
  const chainTotals = (cte: string, table: string, bucket: 'day' | 'hour') => sql`
    ${sql(cte)} as (
      insert into ${sql(table)} as t (chain_id, ${sql(bucket)}, kind, attributions, success_count, reverted_count)
      select chain_id, ${sql(bucket)}, kind, ${sign} * count(*),
             ${sign} * count(distinct item) filter (where status = 'success'), ${sign} * count(distinct item) filter (where status = 'reverted')
      from buckets ${keptBuckets(bucket)} group by 1, 2, 3 order by 1, 2, 3
      on conflict (chain_id, ${sql(bucket)}, kind) do update set
        attributions = t.attributions + excluded.attributions,
        success_count = t.success_count + excluded.success_count,
        reverted_count = t.reverted_count + excluded.reverted_count
      returning 1
    )`
  return sql`
    ${bucketedRows},
    ${codeTotals('code_daily', 'code_daily_totals', 'day')},
    ${codeTotals('code_hourly', 'code_hourly_totals', 'hour')},
    ${chainTotals('chain_daily', 'chain_daily_totals', 'day')},
    ${chainTotals('chain_hourly', 'chain_hourly_totals', 'hour')},
    code_sender_deltas as (
      -- each row counts in its own chain and registry, for any registry ('*'), and (when kept) for every chain (0)
      select b.code, s.registry, s.chain_id, b.day, b.sender, ${sign} * count(*) as delta
      from buckets b cross join lateral (values (b.registry, b.chain_id), ('*', b.chain_id)
        ${everyChain ? sql`, (b.registry, ${EVERY_CHAIN}::int), ('*', ${EVERY_CHAIN}::int)` : sql``}) as s(registry, chain_id)
      group by 1, 2, 3, 4, 5
    ),
    ${scopedDistinctCtes(sql, {
      name: 'code_senders',
      deltas: 'code_sender_deltas',
      refs: 'code_day_sender_refs',
      rowKeys: ['code', 'day', 'sender'],
      scopeKey: CODE_SCOPE_KEY,
      counts: 'code_daily_sender_counts',
      groupKeys: ['code', 'registry', 'chain_id', 'day'],
    })},
    chain_senders as (
      insert into chain_daily_senders as t (chain_id, day, sender, attributions)
      select chain_id, day, sender, ${sign} * count(*) from buckets group by 1, 2, 3 order by 2, 1, 3
      on conflict (day, chain_id, sender) do update set attributions = t.attributions + excluded.attributions
      returning 1
    ),
    ${rollingWindowCtes(sql, sign, everyChain)},
    event_rows as (
      select b.chain_id, code, registry, r.from_block, r.to_block, count(*)::int as attributions
      from buckets b
      join ${sql(event.ranges)} r on r.chain_id = b.chain_id and b.block_number >= r.from_block and (r.to_block is null or b.block_number <= r.to_block)
      group by b.chain_id, r.from_block, r.to_block, code, registry
    ),
    -- one staged row of aligned arrays (one pass builds them all); a trigger inserts the events at commit (drizzle/0018)
    staged_events as (
      insert into attribution_events_staged (type, chain_ids, codes, registries, from_blocks, to_blocks, attributions)
      select ${event.type}, array_agg(chain_id), array_agg(code), array_agg(registry), array_agg(from_block), array_agg(to_block), array_agg(attributions)
      from (select * from event_rows order by chain_id, from_block, code, registry) as ordered
      having count(*) > 0
      returning 1
    ),
    notified as (
      select pg_notify(${ATTRIBUTION_EVENTS_CHANNEL}, json_build_object('type', ${event.type}::text, 'chainId', chain_id, 'fromBlock', from_block)::text)
      from event_rows group by chain_id, from_block
    )`
}

/**
 * The ready rolling windows (rolling-windows.ts) the rows fall
 * in, per chain and (when kept) for every chain: per code totals, and per
 * sender reference counts whose crossings of 0 move the distinct-sender
 * counts. The bounds are locked FOR SHARE, so a window cannot move between
 * this statement reading them and its transaction committing.
 */
function rollingWindowCtes(sql: Sql, sign: 1 | -1, everyChain: boolean) {
  return sql`
    -- every bounds row is locked, ready or not: a row filtered out before the lock would not wait for a build in progress
    windows as (select name, subject, from_at, until_at, ready from window_bounds order by name for share),
    windowed as (
      select w.name as window_name, w.subject, s.scope, b.code, b.registry, b.kind, b.status, b.sender
      from buckets b
      cross join lateral ${chainScopes(sql, 'b.chain_id', everyChain)}
      join windows w on w.ready and b.hour >= w.from_at and b.hour < w.until_at
    ),
    code_windows as (
      insert into code_window_totals as t (window_name, scope, code, registry, transactions, user_operations, reverted)
      select window_name, scope, code, registry,
        ${sign} * count(*) filter (where status = 'success' and kind = 'transaction'),
        ${sign} * count(*) filter (where status = 'success' and kind = 'userOperation'),
        ${sign} * count(*) filter (where status = 'reverted')
      from windowed where subject = 'code' group by 1, 2, 3, 4 order by 1, 2, 3, 4
      on conflict (window_name, scope, code, registry) do update set
        transactions = t.transactions + excluded.transactions,
        user_operations = t.user_operations + excluded.user_operations,
        reverted = t.reverted + excluded.reverted
      returning 1
    ),
    sender_deltas as (
      select window_name, scope, sender, ${sign} * count(*) as delta from windowed where subject = 'sender' group by 1, 2, 3
    ),
    ${scopedDistinctCtes(sql, {
      name: 'window_senders',
      deltas: 'sender_deltas',
      ...WINDOW_SENDER_TABLES,
    })},
    code_sender_window_deltas as (
      select w.name as window_name, d.code, d.registry, d.chain_id, d.sender, sum(d.delta) as delta
      from code_sender_deltas d
      join windows w on w.ready and w.subject = 'code-sender'
        and (d.day::timestamp at time zone 'UTC') >= w.from_at and (d.day::timestamp at time zone 'UTC') < w.until_at
      group by 1, 2, 3, 4, 5
    ),
    ${scopedDistinctCtes(sql, {
      name: 'window_code_senders',
      deltas: 'code_sender_window_deltas',
      ...WINDOW_CODE_SENDER_TABLES,
    })}`
}
