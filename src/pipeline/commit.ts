import type postgres from 'postgres'
import type { AttributionRecord, MalformedRecord } from '../attribution/records.js'
import type { Database } from '../db/client.js'
import type { IndexedBlock } from './fetch.js'
import type { RangeJob } from './queue.js'
import type { Resolution } from './resolve.js'

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

/**
 * The totals moved by the attribution rows in the CTE `rows` (inserted, or
 * deleted with `sign` -1), as two data-modifying CTEs: per code × chain ×
 * UTC day × kind, and per UTC hour. Rows are upserted in key order so
 * concurrent commits take the shared totals rows' locks in the same order
 * and wait for each other instead of deadlocking.
 */
function totalsCtes(sql: Sql, rows: string, sign: 1 | -1) {
  const bucketed = (cte: string, table: string, bucket: string, bucketOf: string) => sql`
    ${sql(cte)} as (
      insert into ${sql(table)} as t (code, chain_id, ${sql(bucket)}, kind, success_count, reverted_count, suffix_gas)
      select code, chain_id, ${sql.unsafe(bucketOf)}, kind,
             ${sign} * count(*) filter (where status = 'success'), ${sign} * count(*) filter (where status = 'reverted'), ${sign} * sum(suffix_gas)
      from ${sql(rows)} group by 1, 2, 3, 4 order by 1, 2, 3, 4
      on conflict (code, chain_id, ${sql(bucket)}, kind) do update set
        success_count = t.success_count + excluded.success_count,
        reverted_count = t.reverted_count + excluded.reverted_count,
        suffix_gas = t.suffix_gas + excluded.suffix_gas
      returning 1
    )`
  return sql`
    ${bucketed('daily', 'code_daily_totals', 'day', "(block_timestamp at time zone 'UTC')::date")},
    ${bucketed('hourly', 'code_hourly_totals', 'hour', "date_trunc('hour', block_timestamp, 'UTC')")}`
}

/**
 * Deletes the attribution rows of `chainId` above `block` and takes them out
 * of the totals, in one statement. Returns how many rows went.
 */
export async function removeAttributionsAbove(sql: Sql, chainId: number, block: number): Promise<number> {
  const [row] = await sql<{ removed: number }[]>`
    with gone as (
      delete from attributions where chain_id = ${chainId} and block_number > ${block}
      returning code, chain_id, kind, status, suffix_gas, block_timestamp
    ),
    ${totalsCtes(sql, 'gone', -1)}
    select count(*)::int as removed from gone`
  return row!.removed
}

/**
 * Aggregate stage, exactly once, as one SQL statement (so one round trip and
 * atomic by itself): flip the range to done only if it is still pending on
 * this branch, and — only then — write its blocks, its attribution rows with
 * ON CONFLICT DO NOTHING, its malformed suffixes, and move the totals by
 * exactly the rows inserted. A worker killed anywhere leaves all or nothing;
 * a repeat finds the range done and writes nothing.
 *
 * Rows travel as one JSON document each (jsonb_to_recordset), which keeps
 * the statement's parameter count fixed whatever the range holds.
 */
export async function commitRange(db: Database, result: RangeResult): Promise<CommitOutcome> {
  const { job } = result
  const sql = db.$client
  const blocks = result.blocks.map((block) => ({
    chain_id: job.chainId,
    number: block.number,
    hash: block.hash,
    parent_hash: block.parentHash,
    timestamp: new Date(block.timestamp * 1000).toISOString(),
    tx_count: block.txCount,
  }))
  const attributions = result.rows.map((row) => attributionColumns(job.chainId, row))
  const malformed = result.malformed.map((m) => ({
    chain_id: job.chainId,
    block_number: m.blockNumber,
    tx_hash: m.txHash,
    user_op_index: m.userOpIndex,
    reason: m.reason.slice(0, 500),
  }))
  const [row] = await sql<{ done: number; inserted: number }[]>`
    with done as (
      update ranges
      set status = 'done', tx_count = ${result.txCount}, attribution_count = ${result.rows.length},
          done_at = now(), mismatch_at = null
      where chain_id = ${job.chainId} and from_block = ${job.fromBlock} and to_hash = ${job.toHash} and status = 'pending'
      returning 1
    ),
    stored_blocks as (
      insert into blocks (chain_id, number, hash, parent_hash, timestamp, tx_count)
      select * from jsonb_to_recordset(${JSON.stringify(blocks)}::jsonb)
        as b(chain_id int, number bigint, hash text, parent_hash text, timestamp timestamptz, tx_count int)
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
      returning code, chain_id, kind, status, suffix_gas, block_timestamp
    ),
    stored_malformed as (
      insert into malformed_suffixes (chain_id, block_number, tx_hash, user_op_index, reason)
      select * from jsonb_to_recordset(${JSON.stringify(malformed)}::jsonb)
        as m(chain_id int, block_number bigint, tx_hash text, user_op_index int, reason text)
      where exists (select 1 from done)
      on conflict do nothing
      returning 1
    ),
    ${totalsCtes(sql, 'inserted', 1)}
    select (select count(*) from done)::int as done, (select count(*) from inserted)::int as inserted`
  return { committed: row!.done === 1, inserted: row!.inserted }
}
