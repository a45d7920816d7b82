import type postgres from 'postgres'
import type { AttributionRecord, MalformedRecord } from '../attribution/records.js'
import type { Database } from '../db/client.js'
import type { Hex } from 'viem'
import type { BlockContext } from '../attribution/records.js'
import type { Resolution } from '../attribution/decode.js'
import { boundedReason } from '../attribution/limits.js'
import { EVERY_CHAIN } from '../db/schema/index.js'
import { ATTRIBUTION_EVENTS_CHANNEL } from './events.js'
import type { RangeJob } from './ranges.js'
import { CHAIN_SCOPE_KEY, CODE_SCOPE_KEY, scopedDistinctCtes } from './scope-refs.js'
import { chainScopes, everyChainKeptIn, forgetEveryChainState, scopeCheck, writesEveryChain } from './every-chain.js'

/** A block of a range as stored: the recent chain the reorg check walks. */
export type IndexedBlock = BlockContext & { parentHash: Hex; txCount: number }

/** One attribution row: a record and one of its codes, resolved against the registry. */
export type AttributionRow = { record: AttributionRecord; code: string; resolution: Resolution }

export type RangeResult = {
  job: RangeJob
  blocks: IndexedBlock[]
  txCount: number
  rows: AttributionRow[]
  malformed: MalformedRecord[]
}

export type CommitOutcome = { committed: boolean; inserted: number }

type Sql = postgres.Sql | postgres.TransactionSql | postgres.ReservedSql

function attributionColumns(chainId: number, { record, code, resolution }: AttributionRow) {
  const { attribution } = record
  return {
    chain_id: chainId,
    block_number: record.blockNumber,
    block_hash: record.blockHash,
    block_timestamp: new Date(record.blockTimestamp * 1000).toISOString(),
    tx_hash: record.txHash,
    tx_index: record.txIndex,
    kind: record.kind,
    user_op_index: record.userOpIndex,
    user_op_hash: record.userOpHash ?? null,
    sender: record.sender,
    target: record.target,
    code,
    code_status: resolution.status,
    code_wallet: resolution.wallet,
    codes: attribution.codes,
    schema_id: attribution.schemaId,
    registry_chain_id: resolution.registry?.chainId ?? null,
    registry_address: resolution.registry?.address ?? null,
    suffix: attribution.suffix,
    suffix_bytes: attribution.suffixBytes,
    suffix_gas: attribution.suffixGas,
    status: record.status,
    actual_gas_cost: record.actualGasCost?.toString() ?? null,
  }
}

/** The columns every aggregate is computed from, as the `returning` of an insert or delete of attribution rows. */
const AGGREGATED_COLUMNS =
  'code, chain_id, block_number, kind, status, suffix_gas, block_timestamp, sender, tx_hash, user_op_index, registry_chain_id, registry_address'

/**
 * What the stream's events name: the kind of change, and a CTE of the block
 * ranges it covers (`chain_id, from_block, to_block`; `to_block` null for a
 * rollback, everything from `from_block` up).
 */
type EventRanges = { type: 'commit' | 'rollback'; ranges: string }

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
function aggregateCtes(sql: Sql, rows: string, sign: 1 | -1, event: EventRanges, everyChain: boolean) {
  const bucketedRows = sql`
    buckets as (
      select code, chain_id, block_number, kind, status, suffix_gas, sender, tx_hash || ':' || user_op_index as item,
        case when registry_address is null then 'canonical' else registry_chain_id::text || ':' || lower(registry_address) end as registry,
        (block_timestamp at time zone 'UTC')::date as day,
        date_trunc('hour', block_timestamp, 'UTC') as hour
      from ${sql(rows)}
    )`
  const codeTotals = (cte: string, table: string, bucket: 'day' | 'hour') => sql`
    ${sql(cte)} as (
      insert into ${sql(table)} as t (code, registry, chain_id, ${sql(bucket)}, kind, success_count, reverted_count, suffix_gas)
      select code, registry, chain_id, ${sql(bucket)}, kind,
             ${sign} * count(*) filter (where status = 'success'), ${sign} * count(*) filter (where status = 'reverted'), ${sign} * sum(suffix_gas)
      from buckets group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5
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
      from buckets group by 1, 2, 3 order by 1, 2, 3
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
    events as (
      insert into attribution_events (type, chain_id, code, registry, from_block, to_block, attributions)
      select ${event.type}, b.chain_id, code, registry, r.from_block, r.to_block, count(*)
      from buckets b
      join ${sql(event.ranges)} r on r.chain_id = b.chain_id and b.block_number >= r.from_block and (r.to_block is null or b.block_number <= r.to_block)
      group by b.chain_id, r.from_block, r.to_block, code, registry order by b.chain_id, r.from_block, code, registry
      returning id, chain_id, from_block
    ),
    notified as (
      select pg_notify(${ATTRIBUTION_EVENTS_CHANNEL}, json_build_object(
        'type', ${event.type}::text, 'chainId', chain_id, 'fromBlock', from_block, 'minId', min(id), 'maxId', max(id))::text)
      from events group by chain_id, from_block
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
      refs: 'window_sender_refs',
      rowKeys: ['window_name', 'sender'],
      scopeKey: CHAIN_SCOPE_KEY,
      counts: 'sender_window_counts',
      groupKeys: ['window_name', 'scope'],
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
      refs: 'window_code_sender_refs',
      rowKeys: ['window_name', 'code', 'sender'],
      scopeKey: CODE_SCOPE_KEY,
      counts: 'code_sender_window_counts',
      groupKeys: ['window_name', 'code', 'registry', 'chain_id'],
    })}`
}

/**
 * Deletes the attribution rows of \`chainId\` above \`block\` and takes them out
 * of every aggregate, in one statement of the caller's transaction (which
 * holds the every-chain scope state from here on). Returns how many rows went.
 */
export async function removeAttributionsAbove(sql: postgres.TransactionSql | postgres.ReservedSql, chainId: number, block: number): Promise<number> {
  const everyChain = await everyChainKeptIn(sql)
  const [row] = await sql<{ removed: number }[]>`
    with gone as (
      delete from attributions where chain_id = ${chainId} and block_number > ${block}
      returning ${sql.unsafe(AGGREGATED_COLUMNS)}
    ),
    rolled_back as (select ${chainId}::int as chain_id, ${block + 1}::bigint as from_block, null::bigint as to_block),
    ${aggregateCtes(sql, 'gone', -1, { type: 'rollback', ranges: 'rolled_back' }, everyChain)}
    select count(*)::int as removed from gone, (select count(*) from notified) as n`
  return row!.removed
}

/**
 * Aggregate stage, exactly once, as one SQL statement (so one round trip and
 * atomic by itself) for one range or several: flip the ranges to done only
 * if every one is still pending on its branch, and — only then — write their
 * blocks, their attribution rows with ON CONFLICT DO NOTHING, their
 * malformed suffixes, and move the totals by exactly the rows inserted. A
 * worker killed anywhere leaves all or nothing; a repeat finds the ranges
 * done and writes nothing. A batch with a range no longer pending (indexed
 * by another worker, or replaced by a reorg) writes nothing and says so:
 * its caller commits those ranges one by one.
 *
 * Several ranges in one statement share its fixed cost and each aggregate
 * row they have in common (a code's totals, its rolling windows): on a
 * chain with a long tail of codes that is most of a commit's cost. Ranges
 * are locked in (chain, block) order, so two statements sharing a range
 * wait for each other instead of deadlocking.
 *
 * Rows travel as one JSON document each (jsonb_to_recordset), which keeps
 * the statement's parameter count fixed whatever the ranges hold.
 */
export async function commitRanges(db: Database, results: readonly RangeResult[]): Promise<CommitOutcome[]> {
  const sql = db.$client
  const chainIds = results.map(({ job }) => job.chainId)
  // the every-chain scope's state can change under a statement only once in a database's life: a second try fits
  for (let attempt = 0; attempt < 3; attempt++) {
    const everyChain = await writesEveryChain(sql, chainIds)
    const outcomes = await commitStatement(sql, results, everyChain)
    if (outcomes) return outcomes
    forgetEveryChainState(sql)
  }
  throw new Error('the every-chain scope state kept changing under the commit')
}

/** The statement of commitRanges; undefined when the every-chain scope was not in the state assumed (nothing written). */
async function commitStatement(sql: postgres.Sql, results: readonly RangeResult[], everyChain: boolean): Promise<CommitOutcome[] | undefined> {
  const ranges = results.map(({ job, txCount, rows }) => ({
    chain_id: job.chainId,
    from_block: job.fromBlock,
    to_block: job.toBlock,
    to_hash: job.toHash,
    tx_count: txCount,
    attribution_count: rows.length,
  }))
  const blocks = results.flatMap(({ job, blocks }) =>
    blocks.map((block) => ({
      chain_id: job.chainId,
      number: block.number,
      hash: block.hash,
      parent_hash: block.parentHash,
      timestamp: new Date(block.timestamp * 1000).toISOString(),
      tx_count: block.txCount,
    })),
  )
  const attributions = results.flatMap(({ job, rows }) => rows.map((row) => attributionColumns(job.chainId, row)))
  const malformed = results.flatMap(({ job, malformed }) =>
    malformed.map((m) => ({
      chain_id: job.chainId,
      block_number: m.blockNumber,
      tx_hash: m.txHash,
      user_op_index: m.userOpIndex,
      reason: boundedReason(m.reason),
    })),
  )
  const [row] = await sql<{ scope_ok: boolean; done: Array<{ chainId: number; fromBlock: number; inserted: number }> }[]>`
    with ${scopeCheck(sql, everyChain, results[0]!.job.chainId)},
    batch as (
      select * from jsonb_to_recordset(${JSON.stringify(ranges)}::jsonb)
        as b(chain_id int, from_block bigint, to_block bigint, to_hash text, tx_count int, attribution_count int)
    ),
    locked as (
      select r.chain_id, r.from_block from ranges r
      join batch b on r.chain_id = b.chain_id and r.from_block = b.from_block and r.to_hash = b.to_hash
      where r.status = 'pending' and exists (select 1 from scope_ok)
      order by r.chain_id, r.from_block
      for update of r
    ),
    done as (
      update ranges r
      set status = 'done', tx_count = b.tx_count, attribution_count = b.attribution_count, done_at = now(), mismatch_at = null
      from batch b
      where (select count(*) from locked) = ${results.length}
        and r.chain_id = b.chain_id and r.from_block = b.from_block and r.to_hash = b.to_hash and r.status = 'pending'
      returning r.chain_id, r.from_block, r.to_block
    ),
    stored_blocks as (
      insert into blocks (chain_id, number, hash, parent_hash, timestamp, tx_count)
      select * from jsonb_to_recordset(${JSON.stringify(blocks)}::jsonb)
        as k(chain_id int, number bigint, hash text, parent_hash text, timestamp timestamptz, tx_count int)
      where exists (select 1 from done)
      on conflict (chain_id, number) do update set
        hash = excluded.hash, parent_hash = excluded.parent_hash, timestamp = excluded.timestamp, tx_count = excluded.tx_count
      returning 1
    ),
    inserted as (
      insert into attributions (
        chain_id, block_number, block_hash, block_timestamp, tx_hash, tx_index, kind, user_op_index, user_op_hash,
        sender, target, code, code_status, code_wallet, codes, schema_id, registry_chain_id, registry_address,
        suffix, suffix_bytes, suffix_gas, status, actual_gas_cost)
      select * from jsonb_to_recordset(${JSON.stringify(attributions)}::jsonb)
        as a(chain_id int, block_number bigint, block_hash text, block_timestamp timestamptz, tx_hash text, tx_index int,
             kind text, user_op_index int, user_op_hash text, sender text, target text, code text, code_status text,
             code_wallet text, codes text[], schema_id smallint, registry_chain_id bigint, registry_address text,
             suffix text, suffix_bytes int, suffix_gas int, status text, actual_gas_cost text)
      where exists (select 1 from done)
      on conflict (chain_id, tx_hash, user_op_index, code) do nothing
      returning ${sql.unsafe(AGGREGATED_COLUMNS)}
    ),
    stored_malformed as (
      insert into malformed_suffixes (chain_id, block_number, tx_hash, user_op_index, reason)
      select * from jsonb_to_recordset(${JSON.stringify(malformed)}::jsonb)
        as m(chain_id int, block_number bigint, tx_hash text, user_op_index int, reason text)
      where exists (select 1 from done)
      on conflict do nothing
      returning 1
    ),
    ${aggregateCtes(sql, 'inserted', 1, { type: 'commit', ranges: 'done' }, everyChain)}
    select exists (select 1 from scope_ok) as scope_ok,
      (select coalesce(json_agg(json_build_object('chainId', d.chain_id, 'fromBlock', d.from_block,
        'inserted', (select count(*) from inserted i where i.chain_id = d.chain_id and i.block_number between d.from_block and d.to_block))), '[]')
       from done d) as done,
      (select count(*) from notified)::int as notified`
  if (!row!.scope_ok) return undefined
  return results.map(({ job }) => {
    const outcome = row!.done.find((done) => done.chainId === job.chainId && done.fromBlock === job.fromBlock)
    return { committed: outcome !== undefined, inserted: outcome?.inserted ?? 0 }
  })
}

/** One range's aggregate stage (commitRanges with one range). */
export async function commitRange(db: Database, result: RangeResult): Promise<CommitOutcome> {
  const [outcome] = await commitRanges(db, [result])
  return outcome!
}
