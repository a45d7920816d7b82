import type postgres from 'postgres'
import type { Hex } from 'viem'
import { boundedReason } from '../attribution/limits.js'
import type { BlockContext, MalformedRecord, StoredRecord } from '../attribution/records.js'
import { planForParameters, type Database } from '../db/client.js'
import { aggregateCtes } from './aggregates.js'
import { holdRefsWritersAlone, shareRefsWriters } from './final-refs.js'
import { markedHistoryDays, recountHistoryDays, windowsReadFromMs } from './history-days.js'
import { DAY_MS, dayOf } from './buckets.js'
import { AGGREGATED_COLUMNS, attributionInsert, suffixInsert, type AttributionRow, type SourceGroup, type UnnestInsert } from './attribution-columns.js'
import { createEveryChainMemory, everyChainKeptIn, forgetEveryChainState, scopeCheck, writesEveryChain, type EveryChainMemory } from './every-chain.js'
import type { RangeJob } from './ranges.js'
import type { RowPieces } from './row-pieces.js'

export type { AttributionRow } from './attribution-columns.js'

/** A block of a range as stored: the recent chain the reorg check walks. */
export type IndexedBlock = BlockContext & { parentHash: Hex; txCount: number }

export type RangeResult = {
  job: RangeJob
  /** Wholly at or below the chain's finalized block (pipeline/finality.ts): committed by the bulk path. */
  final?: boolean
  /** The time (Unix seconds) of the node's finalized block as the range's worker knew it (pipeline/finality.ts), if known. */
  finalizedAt?: number
  blocks: IndexedBlock[]
  txCount: number
  rows: AttributionRow[]
  malformed: MalformedRecord[]
  /** Its rows were handed to the store ahead of the commit (IndexStore.hold): `rows` is empty here and this is their ticket. */
  heldRows?: number
  /** Where the rows were held (the commit thread), they come back as bytes a piece at a time (row-pieces.ts): read by the bulk path piece by piece, or all at once for the tip path (index-store.ts). */
  rowPieces?: RowPieces
}

/** A range's attribution rows, held as objects or as pieces. */
export const rowCount = ({ rows, rowPieces }: Pick<RangeResult, 'rows' | 'rowPieces'>) => rows.length + (rowPieces?.count ?? 0)

export type CommitOutcome = { committed: boolean; inserted: number }

type Sql = postgres.Sql | postgres.TransactionSql | postgres.ReservedSql

const RETURNED_COLUMNS = AGGREGATED_COLUMNS.map((name) => `"${name}"`).join(', ')

/**
 * `unnest(…) as u(columns)` over one array literal per column: the rows
 * travel as as many parameters as the table has columns, whatever their
 * number, and PostgreSQL reads each value with its column type's input
 * function (no JSON document to parse and walk).
 */
export function unnestRows<Source>(sql: Sql, insert: UnnestInsert<Source>, groups: ReadonlyArray<SourceGroup<Source>>) {
  const arrays = insert.arrays(groups)
  const parameters = arrays
    .map((literal, i) => sql`${literal}::${sql.unsafe(insert.arrayTypes[i]!)}`)
    .reduce((list, parameter) => sql`${list}, ${parameter}`)
  return sql`unnest(${parameters}) as u(${sql.unsafe(insert.names.map((name) => `"${name}"`).join(', '))})`
}

/** Each attributed transaction or UserOperation of the rows, once: its suffix is stored once, not per code. */
export function recordsOf(rows: readonly AttributionRow[]): StoredRecord[] {
  const records: StoredRecord[] = []
  for (const row of rows) if (records.at(-1) !== row.record) records.push(row.record)
  return records
}

/**
 * Deletes the attribution rows of \`chainId\` above \`block\` and takes them out
 * of every aggregate, in one statement of the caller's transaction (which
 * holds the every-chain scope state from here on). Returns how many rows went.
 */
export async function removeAttributionsAbove(sql: postgres.TransactionSql | postgres.ReservedSql, chainId: number, block: number): Promise<number> {
  const everyChain = await everyChainKeptIn(sql)
  const historic = await sql<{ day: string }[]>`
    select day::text as day from history_days
    where chain_id = ${chainId} and history
      and day >= (select (min(block_timestamp) at time zone 'UTC')::date from attributions where chain_id = ${chainId} and block_number > ${block})`
  const [row] = await sql<{ removed: number }[]>`
    with gone as (
      delete from attributions where chain_id = ${chainId} and block_number > ${block}
      returning ${sql.unsafe(RETURNED_COLUMNS)}
    ),
    gone_suffixes as (
      -- a suffix row goes with its rows: those above the block (its key leads with the block, as theirs does)
      delete from attribution_suffixes where chain_id = ${chainId} and block_number > ${block}
      returning 1
    ),
    rolled_back as (select ${chainId}::int as chain_id, ${block + 1}::bigint as from_block, null::bigint as to_block),
    ${aggregateCtes(sql, 'gone', -1, { type: 'rollback', ranges: 'rolled_back' }, everyChain)}
    select count(*)::int as removed from gone, (select count(*) from notified) as n, (select count(*) from gone_suffixes) as s`
  // a history day's counts come from its rows (history-days.ts): counted again without those gone
  if (historic.length > 0) await recountHistoryDays(sql, chainId, historic.map(({ day }) => day), everyChain)
  return row!.removed
}

/**
 * Aggregate stage, exactly once, as one SQL statement (so one round trip and
 * atomic by itself) for one range or several: flip the ranges to done only
 * if every one is still pending on its branch, and — only then — write their
 * blocks, their attribution rows with ON CONFLICT DO NOTHING, each
 * attributed transaction's (or UserOperation's) suffix once, their
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
 * Attribution and suffix rows travel as one array literal per column
 * (unnestRows, generated from the column tables of attribution-columns.ts);
 * ranges, blocks and malformed suffixes, a few per range, as one JSON
 * document each (jsonb_to_recordset). Either way the statement's parameter
 * count is fixed whatever the ranges hold.
 */
export async function commitRanges(
  db: Database,
  results: readonly RangeResult[],
  // an IndexStore passes the state it remembers; alone, the state is read afresh
  memory: EveryChainMemory = createEveryChainMemory(),
): Promise<CommitOutcome[]> {
  const sql = db.$client
  const chainIds = results.map(({ job }) => job.chainId)
  const mayBeHistory = daysMaybeHistory(results)
  let recountsHistory = false
  // the every-chain scope's state can change under a statement only once in a database's life, and a commit finds
  // it touches a history day at most once: a try for each fits
  for (let attempt = 0; attempt < 4; attempt++) {
    const everyChain = await writesEveryChain(sql, chainIds, memory)
    try {
      const outcomes = await sql.begin((tx) => tipCommit(tx, results, everyChain, { mayBeHistory, recountsHistory }))
      if (outcomes) return outcomes
      forgetEveryChainState(memory)
    } catch (error) {
      if (!(error instanceof TouchesHistoryDays)) throw error
      recountsHistory = true
    }
  }
  throw new Error('the every-chain scope state kept changing under the commit')
}

/** A tip commit whose rows fall in a day `history_days` marks as history: rolled back, committed again to recount it. */
class TouchesHistoryDays extends Error {}

/**
 * One statement, in a transaction of its own so that it shares the
 * distinct-sender tables with other tip commits but not with a bulk commit
 * (final-refs.ts), and is planned for its arrays' sizes. The lock, the
 * setting and the statement are sent together (pipelined, one round trip
 * instead of three): PostgreSQL runs a connection's statements in order,
 * so the lock is held before the statement starts, and a failure of any
 * rolls the transaction back. A commit at the head is a few round trips in
 * all, each of them a wait for a core on a busy machine (issue 40.3).
 *
 * Rows of days that may be history (a node whose head is weeks old) ask,
 * with the statement and under the same lock, whether a bulk commit marked
 * any of those days history (a process whose finalized block is ahead of
 * this one's): the day's members do not hold its senders there, so the
 * commit is made again alone (`recountsHistory`), and those days recounted
 * from their rows (history-days.ts).
 */
async function tipCommit(
  tx: postgres.TransactionSql,
  results: readonly RangeResult[],
  everyChain: boolean,
  { mayBeHistory, recountsHistory }: { mayBeHistory: ReadonlyMap<number, ReadonlySet<string>>; recountsHistory: boolean },
) {
  const settings = [recountsHistory ? holdRefsWritersAlone(tx) : shareRefsWriters(tx), ...(isPlannedForItsRows(results) ? [planForParameters(tx)] : [])]
  const marked = !recountsHistory && mayBeHistory.size > 0 ? markedHistoryDays(tx, mayBeHistory).execute() : undefined
  const statement = commitStatement(tx, results, everyChain)
  await Promise.all([...settings, marked, statement])
  if (marked && (await marked).length > 0) throw new TouchesHistoryDays()
  const outcome = await statement
  if (outcome && recountsHistory) for (const [chainId, days] of mayBeHistory) await recountHistoryDays(tx, chainId, [...days], everyChain)
  return outcome
}

/**
 * Per chain, the days of the rows that may be history: before the first
 * day a rolling window reads (every history day is), by this process's
 * clock with a day to spare. None at the head of a chain that keeps time.
 */
function daysMaybeHistory(results: readonly RangeResult[]): Map<number, Set<string>> {
  const beforeMs = windowsReadFromMs(Date.now()) + DAY_MS
  const days = new Map<number, Set<string>>()
  for (const { job, rows } of results)
    for (const { record } of rows) {
      const ms = record.blockTimestamp * 1000
      if (ms >= beforeMs) continue
      const chainDays = days.get(job.chainId) ?? new Set<string>()
      days.set(job.chainId, chainDays.add(dayOf(new Date(ms))))
    }
  return days
}

/**
 * Most rows in one of a commit statement's arrays (attribution rows,
 * blocks) for which it runs whatever plan PostgreSQL keeps for it. A
 * generic plan is costed as if each array held 100 rows (what PostgreSQL
 * assumes of `unnest` and `jsonb_to_recordset`): right for a range at the
 * head, a few rows, where planning the statement anew cost more than the
 * statement (11.6 against 6.4 ms a commit of 3 rows). A backfill's batch
 * of thousands of rows is planned for them (planForParameters): a generic
 * plan that joined two of its CTEs in a nested loop took 11.5 s instead
 * of 1.4 s.
 */
const CACHED_PLAN_MOST_ROWS = 100

function isPlannedForItsRows(results: readonly RangeResult[]): boolean {
  let rows = 0
  let blocks = 0
  for (const result of results) {
    rows += result.rows.length
    blocks += result.blocks.length
  }
  return Math.max(rows, blocks) > CACHED_PLAN_MOST_ROWS
}

/** The statement of commitRanges; undefined when the every-chain scope was not in the state assumed (nothing written). */
async function commitStatement(sql: Sql, results: readonly RangeResult[], everyChain: boolean): Promise<CommitOutcome[] | undefined> {
  const rows = results.map(({ job, rows }) => ({ chainId: job.chainId, sources: rows }))
  const records = results.map(({ job, rows }) => ({ chainId: job.chainId, sources: recordsOf(rows) }))
  const [row] = await sql<{ scope_ok: boolean; done: Array<{ chainId: number; fromBlock: number; inserted: number }> }[]>`
    with ${scopeCheck(sql, everyChain, results[0]!.job.chainId)},
    ${rangeFlipCtes(sql, results, sql`exists (select 1 from scope_ok)`)},
    stored_blocks as (
      ${blocksInsert(sql, results)}
      where exists (select 1 from done)
      ${sql.unsafe(BLOCK_CONFLICT_SQL)}
      returning 1
    ),
    inserted as (
      insert into attributions (${sql.unsafe(attributionInsert.names.map((name) => `"${name}"`).join(', '))})
      select ${sql.unsafe(attributionInsert.selectList)} from ${unnestRows(sql, attributionInsert, rows)}
      where exists (select 1 from done)
      on conflict (chain_id, block_number, tx_hash, user_op_index, code) do nothing
      returning ${sql.unsafe(RETURNED_COLUMNS)}
    ),
    stored_suffixes as (
      insert into attribution_suffixes (${sql.unsafe(suffixInsert.names.map((name) => `"${name}"`).join(', '))})
      select ${sql.unsafe(suffixInsert.selectList)} from ${unnestRows(sql, suffixInsert, records)}
      where exists (select 1 from done)
      on conflict do nothing
      returning 1
    ),
    stored_malformed as (
      ${malformedInsert(sql, results)}
      where exists (select 1 from done)
      on conflict do nothing
      returning 1
    ),
    ${aggregateCtes(sql, 'inserted', 1, { type: 'commit', ranges: 'done' }, everyChain)}
    select exists (select 1 from scope_ok) as scope_ok,
      (select coalesce(json_agg(json_build_object('chainId', d.chain_id, 'fromBlock', d.from_block,
        'inserted', (select count(*) from inserted i where i.chain_id = d.chain_id and i.block_number between d.from_block and d.to_block))), '[]')
       from done d) as done,
      (select count(*) from notified)::int as notified,
      (select count(*) from stored_suffixes)::int as suffixes`
  if (!row!.scope_ok) return undefined
  return results.map(({ job }) => {
    const outcome = row!.done.find((done) => done.chainId === job.chainId && done.fromBlock === job.fromBlock)
    return { committed: outcome !== undefined, inserted: outcome?.inserted ?? 0 }
  })
}

/**
 * The CTEs `batch`, `locked` and `done` that flip a batch's ranges to done
 * — all of them or none, and only those still pending on their branch —
 * locking them in (chain, block) order, so two statements sharing a range
 * wait for each other instead of deadlocking. `guard`, when given, must
 * hold for any range to be locked (the tip path's scope check). Both
 * commit paths begin with it (bulk-commit.ts).
 */
export function rangeFlipCtes(sql: Sql, results: readonly RangeResult[], guard = sql`true`) {
  const batch = results.map((result) => ({
    chain_id: result.job.chainId,
    from_block: result.job.fromBlock,
    to_hash: result.job.toHash,
    tx_count: result.txCount,
    attribution_count: rowCount(result),
  }))
  return sql`
    batch as (
      select * from jsonb_to_recordset(${JSON.stringify(batch)}::jsonb)
        as b(chain_id int, from_block bigint, to_hash text, tx_count int, attribution_count int)
    ),
    locked as (
      select r.chain_id, r.from_block from ranges r
      join batch b on r.chain_id = b.chain_id and r.from_block = b.from_block and r.to_hash = b.to_hash
      where r.status = 'pending' and ${guard}
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
    )`
}

/** `insert into blocks … select` of the batch's blocks (a few per range, as one JSON document); the caller adds its conditions and BLOCK_CONFLICT. */
export function blocksInsert(sql: Sql, results: readonly RangeResult[]) {
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
  return sql`
    insert into blocks (chain_id, number, hash, parent_hash, timestamp, tx_count)
    select * from jsonb_to_recordset(${JSON.stringify(blocks)}::jsonb)
      as k(chain_id int, number bigint, hash text, parent_hash text, timestamp timestamptz, tx_count int)`
}

/** A block indexed again (after a reorg, on the new branch) replaces the one stored. */
export const BLOCK_CONFLICT_SQL = `on conflict (chain_id, number) do update set
  hash = excluded.hash, parent_hash = excluded.parent_hash, timestamp = excluded.timestamp, tx_count = excluded.tx_count`

/** `insert into malformed_suffixes … select` of the batch's malformed suffixes; the caller adds its conditions and conflict clause. */
export function malformedInsert(sql: Sql, results: readonly RangeResult[]) {
  const malformed = results.flatMap(({ job, malformed }) =>
    malformed.map((m) => ({ chain_id: job.chainId, block_number: m.blockNumber, tx_hash: m.txHash, user_op_index: m.userOpIndex, reason: boundedReason(m.reason) })),
  )
  return sql`
    insert into malformed_suffixes (chain_id, block_number, tx_hash, user_op_index, reason)
    select * from jsonb_to_recordset(${JSON.stringify(malformed)}::jsonb)
      as m(chain_id int, block_number bigint, tx_hash text, user_op_index int, reason text)`
}

/** One range's aggregate stage (commitRanges with one range). */
export async function commitRange(db: Database, result: RangeResult, memory?: EveryChainMemory): Promise<CommitOutcome> {
  const [outcome] = await commitRanges(db, [result], memory)
  return outcome!
}
