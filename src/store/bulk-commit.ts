import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type postgres from 'postgres'
import { planForParameters, type Database } from '../db/client.js'
import type { StoredRecord } from '../attribution/records.js'
import { arrayLiteral, attributionInsert, suffixInsert, type AttributionRow } from './attribution-columns.js'
import { HOUR_MS, HOURLY_TOTALS_DAYS } from './buckets.js'
import { BLOCK_CONFLICT_SQL, blocksInsert, malformedInsert, rangeFlipCtes, recordsOf, rowCount, type CommitOutcome, type RangeResult } from './commit.js'
import { ATTRIBUTION_EVENTS_CHANNEL } from './events.js'
import { chainScopes, createEveryChainMemory, forgetEveryChainState, writesEveryChain, type EveryChainMemory } from './every-chain.js'
import { createFinalMembers, type BatchMembers, type FinalMembers } from './final-members.js'
import { createFolder, type FoldContext, type FoldedAggregates, type WindowBound } from './fold.js'
import { FINAL_REFS, holdRefsWritersAlone } from './final-refs.js'
import { piecesOf } from './row-pieces.js'
import { historyBeforeMs, historyDaysOf, recordHistoryDays, rollUpHistoryDays } from './history-days.js'
import { chainSendersReadFrom } from './rolling-windows.js'
import { scopedDistinctCtes, WINDOW_CODE_SENDER_TABLES, WINDOW_SENDER_TABLES } from './scope-refs.js'

/**
 * The bulk path of the commit (issue 40): ranges wholly at or below the
 * chain's finalized block, committed in one transaction as the tip path
 * commits (commit.ts) — the ranges flip to done with their rows, exactly
 * once, a kill leaves all or nothing — but written the way finalized history
 * can be:
 * - attribution and suffix rows by `COPY … FROM STDIN`: no conflict to
 *   handle, since the ranges are locked pending (no row of theirs exists)
 *   and a range never overlaps another;
 * - every aggregate folded in this process over the whole batch (fold.ts),
 *   then one upsert per aggregate row, instead of grouping each statement's
 *   returned rows in SQL.
 * The aggregate tables are the tip path's, distinct senders kept as
 * presence (final-refs.ts), so reads and the tip path need nothing new —
 * but for a history day's code senders, counted from its rows once the day
 * is complete instead of a member row each (history-days.ts). A
 * bulk-committed range is never rolled back: the follower refuses a reorg
 * below `chain_finality.final_through` (follower/reconcile.ts).
 */

type Tx = postgres.TransactionSql

/** A batch with a range no longer pending: nothing written, its caller commits the ranges one by one. */
class StaleBatch extends Error {}

/** The every-chain scope is not in the state the batch was folded for: folded again with it as it now is. */
class ScopeMoved extends Error {}

export async function commitFinalRanges(
  db: Database,
  results: readonly RangeResult[],
  memory: EveryChainMemory = createEveryChainMemory(),
  finalMembers: FinalMembers = createFinalMembers(),
): Promise<CommitOutcome[]> {
  const sql = db.$client
  const chainIds = results.map(({ job }) => job.chainId)
  let rows: CopyTexts | undefined
  // the every-chain scope's state can change under a commit only once in a database's life: a second try fits
  for (let attempt = 0; attempt < 3; attempt++) {
    const everyChain = await writesEveryChain(sql, chainIds, memory)
    const context = await foldContext(sql, everyChain, results)
    // the COPY text made in the same pass as the first fold: each piece of rows read once (row-pieces.ts)
    const texts = rows ? undefined : createCopyTexts()
    const prepared = await prepareAggregates(results, context, finalMembers, texts)
    rows ??= texts!.result()
    try {
      const written = await sql.begin((tx) => commitInTransaction(tx, results, rows, prepared, finalMembers))
      // the members this commit made final (or found final), remembered once it has committed (final-members.ts)
      finalMembers.add(written.members, written.context.windows)
      return results.map((result) => ({ committed: true, inserted: rowCount(result) }))
    } catch (error) {
      if (error instanceof StaleBatch) return results.map(() => ({ committed: false, inserted: 0 }))
      if (!(error instanceof ScopeMoved)) throw error
    }
    forgetEveryChainState(memory)
  }
  throw new Error('the every-chain scope state kept changing under the commit')
}

const turnOfTheLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * `visit` over every range's rows a piece at a time (row-pieces.ts), the
 * event loop let run between pieces: a batch is tens of thousands of rows,
 * prepared while the other batch in flight waits on this loop between its
 * statements.
 */
async function inPieces(results: readonly RangeResult[], visit: (result: RangeResult, rows: readonly AttributionRow[]) => void): Promise<void> {
  for (const result of results)
    for (const rows of piecesOf(result)) {
      visit(result, rows)
      await turnOfTheLoop()
    }
}

/**
 * What a commit writes, made before its transaction: the COPY texts and the
 * aggregates folded as array literals. Bulk commits run one at a time
 * (holdRefsWritersAlone), so the next batch's folding overlaps the running
 * one's statements instead of the database waiting on it inside each
 * transaction.
 */
type PreparedAggregates = { context: FoldContext; literals: Literals; members: BatchMembers }

async function prepareAggregates(results: readonly RangeResult[], context: FoldContext, finalMembers: FinalMembers, texts?: CopyTextMaker): Promise<PreparedAggregates> {
  const folder = createFolder(context, { knownFinal: finalMembers })
  await inPieces(results, ({ job }, rows) => {
    folder.add(job, rows)
    texts?.add(job.chainId, rows)
  })
  const folded = folder.result()
  const { scopeSets, chainSenders, windowSenderRefs } = folded
  return { context, literals: literalsOf(folded), members: { scopeSets, chainSenders, windowSenderRefs } }
}

/**
 * The transaction in a few round trips whatever the batch (one per
 * statement cost the dense bench seconds a commit: each waits on this
 * process's event loop). Its first statements go out together (postgres.js
 * pipelines a transaction's queries issued without waiting); their answers
 * say whether the batch is still to be written — a range no longer pending
 * is StaleBatch, the every-chain scope in another state ScopeMoved, both
 * rolled back — and with which windows: folded again if a window moved since
 * the batch was prepared (they are locked from here on, as the tip path
 * locks them). Then the aggregates and the COPY of the rows go out together,
 * and COMMIT. The COPY is sent only once the verdict is in: a COPY that
 * fails (a stale range's rows exist) leaves the driver waiting for ever.
 */
async function commitInTransaction(
  tx: Tx,
  results: readonly RangeResult[],
  rows: CopyTexts | undefined,
  prepared: PreparedAggregates,
  finalMembers: FinalMembers,
): Promise<PreparedAggregates> {
  const { context } = prepared
  // sent in this order: each query is executed as it is made (awaited, a query would go out a turn later, after
  // those executed meanwhile: `await` defers a thenable's `then`)
  const [, , scope, flip, current] = await settledInOrder([
    // its arrays hold thousands of rows: planned for them, never by a generic plan costed for 100 (commit.ts)
    planForParameters(tx),
    holdRefsWritersAlone(tx),
    tx<{ ok: boolean }[]>`
      select kept = ${context.everyChain} and (kept or only_chain = ${results[0]!.job.chainId}) as ok from every_chain_scope where id = 1 for share`.execute(),
    tx<{ done: number }[]>`with ${rangeFlipCtes(tx, results)} select count(*)::int as done from done`.execute(),
    foldContext(tx, context.everyChain, results, { lock: true }),
    ...recordFinalThrough(tx, results).map((query) => query.execute()),
    ...storeBlocksAndMalformed(tx, results).map((query) => query.execute()),
  ])
  if ((flip as Array<{ done: number }>)[0]!.done !== results.length) throw new StaleBatch()
  if (!(scope as Array<{ ok: boolean }>)[0]?.ok) throw new ScopeMoved()
  const windows = current as FoldContext
  const written = sameContext(windows, context) ? prepared : await prepareAggregates(results, windows, finalMembers)
  await settledInOrder([
    writeAggregates(tx, written.literals, written.context.everyChain),
    recordHistoryDays(tx, historyDaysOf(results, written.context.historyBeforeMs)).execute(),
    rows && copyRows(tx, rows),
  ])
  // the history days this batch completed, counted from their rows (its own included)
  for (const chainId of new Set(results.map(({ job }) => job.chainId))) await rollUpHistoryDays(tx, chainId, written.context.everyChain)
  return written
}

/**
 * The answers of queries sent together, once every one is in (the
 * transaction ends, by COMMIT or ROLLBACK, only when nothing of it is on its
 * way); the first failure, if any, thrown.
 */
async function settledInOrder(answers: ReadonlyArray<Promise<unknown> | undefined>): Promise<unknown[]> {
  const settled = await Promise.allSettled(answers)
  const failed = settled.find((answer) => answer.status === 'rejected')
  if (failed) throw failed.reason
  return settled.map((answer) => (answer as PromiseFulfilledResult<unknown>).value)
}

/** Per chain, the highest block committed in bulk: a rollback below it is refused (follower/reconcile.ts). */
function recordFinalThrough(tx: Tx, results: readonly RangeResult[]) {
  const highest = new Map<number, number>()
  for (const { job } of results) highest.set(job.chainId, Math.max(highest.get(job.chainId) ?? -1, job.toBlock))
  return [...highest].map(
    ([chainId, block]) => tx`
      insert into chain_finality (chain_id, final_through) values (${chainId}, ${block})
      on conflict (chain_id) do update set final_through = greatest(chain_finality.final_through, excluded.final_through)`,
  )
}

function storeBlocksAndMalformed(tx: Tx, results: readonly RangeResult[]) {
  const blocks = tx`${blocksInsert(tx, results)} ${tx.unsafe(BLOCK_CONFLICT_SQL)}`
  return results.some(({ malformed }) => malformed.length > 0) ? [blocks, tx`${malformedInsert(tx, results)} on conflict do nothing`] : [blocks]
}

/** COPY text in pieces, sent one after another: never concatenated into one string (a copy of every byte, and a rope until then). */
type CopyTexts = { attributions: string[]; suffixes: string[] }

type CopyTextMaker = { add(chainId: number, rows: readonly AttributionRow[]): void; result(): CopyTexts | undefined }

/** The batch's attribution and suffix rows as COPY text, added a piece at a time (inPieces); undefined when it has none. */
function createCopyTexts(): CopyTextMaker {
  const attributions: string[] = []
  const suffixes: string[] = []
  let previousRecord: StoredRecord | undefined
  return {
    add(chainId, rows) {
      if (rows.length === 0) return
      attributions.push(attributionInsert.copyText([{ chainId, sources: rows }]))
      // a record whose rows a piece's end splits: its suffix goes with the piece holding its first row
      const records = recordsOf(rows)
      suffixes.push(suffixInsert.copyText([{ chainId, sources: records[0] === previousRecord ? records.slice(1) : records }]))
      previousRecord = rows.at(-1)?.record
    },
    result: () => (attributions.length === 0 ? undefined : { attributions, suffixes }),
  }
}

/** The attribution and suffix rows, by COPY: the ranges are locked pending, so none of their rows exists yet. */
async function copyRows(tx: Tx, texts: CopyTexts) {
  await copyInto(tx, 'attributions', attributionInsert.names, texts.attributions)
  await copyInto(tx, 'attribution_suffixes', suffixInsert.names, texts.suffixes)
}

/** COPY text (its pieces in order) into a table in the caller's transaction: the bulk path's rows, and the commit bench's floor. */
export async function copyInto(tx: Tx, table: string, columns: readonly string[], pieces: readonly string[]) {
  // table and column names are the schema's constants, never input
  const writable = await tx.unsafe(`copy ${table} (${columns.map((name) => `"${name}"`).join(', ')}) from stdin`).writable()
  await pipeline(Readable.from(pieces.filter((piece) => piece.length > 0)), writable)
}

/**
 * The ready windows (inside the commit locked FOR SHARE, as the tip path
 * locks them), the first hour kept and the first day not history, by the
 * database's clock and the batch's finalized block.
 */
async function foldContext(sql: postgres.Sql | Tx, everyChain: boolean, results: readonly RangeResult[], { lock = false } = {}): Promise<FoldContext> {
  // both sent at once: inside a transaction they are pipelined with its other statements (commitInTransaction)
  const [windows, [clock]] = await Promise.all([
    sql<{ name: string; subject: WindowBound['subject']; from_ms: number; until_ms: number; ready: boolean }[]>`
      select name, subject, ready, (extract(epoch from from_at) * 1000)::float8 as from_ms, (extract(epoch from until_at) * 1000)::float8 as until_ms
      from window_bounds order by name ${lock ? sql`for share` : sql``}`.execute(),
    sql<{ hour_ms: number }[]>`select (extract(epoch from date_trunc('hour', now())) * 1000)::float8 as hour_ms`.execute(),
  ])
  const nowHourMs = clock!.hour_ms
  return {
    everyChain,
    windows: windows.filter((w) => w.ready).map((w) => ({ name: w.name, subject: w.subject, fromMs: w.from_ms, untilMs: w.until_ms })),
    firstKeptHourMs: nowHourMs - HOURLY_TOTALS_DAYS * 24 * HOUR_MS,
    historyBeforeMs: historyBeforeMs(nowHourMs, earliestFinalizedAt(results)),
    chainSendersFromMs: chainSendersReadFrom(windows.map((w) => ({ subject: w.subject, ready: w.ready, fromMs: w.from_ms }))),
  }
}

/** The earliest time of the finalized block the batch's ranges knew (undefined if any knew none): history ends at its day. */
function earliestFinalizedAt(results: readonly RangeResult[]): number | undefined {
  let earliest = Infinity
  for (const { finalizedAt } of results) {
    if (finalizedAt === undefined) return undefined
    earliest = Math.min(earliest, finalizedAt)
  }
  return earliest
}

const sameContext = (a: FoldContext, b: FoldContext) => JSON.stringify(a) === JSON.stringify(b)

/** Each folded table's columns as array literals (the statement's parameters), the scope sets' as one more. */
type Literals = { scopeSets: string } & { [table in Exclude<keyof FoldedAggregates, 'scopeSets'>]: ColumnLiterals }
type ColumnLiterals = Record<string, string>

function literalsOf({ scopeSets, ...tables }: FoldedAggregates): Literals {
  const literals = Object.fromEntries(
    Object.entries(tables).map(([table, columns]) => [table, Object.fromEntries(Object.entries(columns).map(([name, values]) => [name, arrayLiteral(values)]))]),
  )
  return { ...(literals as Omit<Literals, 'scopeSets'>), scopeSets: arrayLiteral(scopeSets) }
}

/** `unnest(…) as u(names)` over one array literal per column: folded rows as a relation. */
function folded(tx: Tx, columns: ColumnLiterals, types: ReadonlyArray<[name: string, type: string]>) {
  const parameters = types
    .map(([name, type]) => tx`${columns[name]!}::${tx.unsafe(`${type}[]`)}`)
    .reduce((list, parameter) => tx`${list}, ${parameter}`)
  return tx`unnest(${parameters}) as u(${tx.unsafe(types.map(([name]) => name).join(', '))})`
}

/**
 * One statement writing every folded aggregate, each upsert in key order
 * (as aggregates.ts does) so commits sharing rows lock them in one order.
 */
function writeAggregates(tx: Tx, aggregates: Literals, everyChain: boolean) {
  return tx`
    with ${scopeSetsCte(tx, aggregates.scopeSets)},
    ${codeTotals(tx, 'code_daily_totals', 'day', 'date', aggregates.codeDaily)},
    ${codeTotals(tx, 'code_hourly_totals', 'hour', 'timestamptz', aggregates.codeHourly)},
    ${chainTotals(tx, 'chain_daily_totals', 'day', 'date', aggregates.chainDaily)},
    ${chainTotals(tx, 'chain_hourly_totals', 'hour', 'timestamptz', aggregates.chainHourly)},
    ${refsCtes(tx, CODE_SENDERS, aggregates.codeSenderRefs)},
    ${refsCtes(tx, WINDOW_SENDERS, aggregates.windowSenderRefs)},
    ${chainSenderCtes(tx, aggregates.chainSenders)},
    ${movingWindowCtes(tx, everyChain)},
    ${codeWindowTotals(tx, aggregates.codeWindows)},
    ${eventCtes(tx, aggregates.events)}
    -- a CTE without data-modifying statements runs only if read: the notifications must be
    select (select count(*) from notified) as notified`.execute()
}

function codeTotals(tx: Tx, table: string, bucket: 'day' | 'hour', type: string, totals: ColumnLiterals) {
  return tx`
    ${tx(table)} as (
      insert into ${tx(table)} as t (code, registry, chain_id, ${tx(bucket)}, kind, success_count, reverted_count, suffix_gas)
      select * from ${folded(tx, totals, [
        ['code', 'text'],
        ['registry', 'text'],
        ['chain_id', 'int'],
        ['bucket', type],
        ['kind', 'text'],
        ['success_count', 'bigint'],
        ['reverted_count', 'bigint'],
        ['suffix_gas', 'bigint'],
      ])}
      order by 1, 2, 3, 4, 5
      on conflict (code, registry, chain_id, ${tx(bucket)}, kind) do update set
        success_count = t.success_count + excluded.success_count,
        reverted_count = t.reverted_count + excluded.reverted_count,
        suffix_gas = t.suffix_gas + excluded.suffix_gas
      returning 1
    )`
}

function chainTotals(tx: Tx, table: string, bucket: 'day' | 'hour', type: string, totals: ColumnLiterals) {
  return tx`
    ${tx(table)} as (
      insert into ${tx(table)} as t (chain_id, ${tx(bucket)}, kind, attributions, success_count, reverted_count)
      select * from ${folded(tx, totals, [
        ['chain_id', 'int'],
        ['bucket', type],
        ['kind', 'text'],
        ['attributions', 'bigint'],
        ['success_count', 'bigint'],
        ['reverted_count', 'bigint'],
      ])}
      order by 1, 2, 3
      on conflict (chain_id, ${tx(bucket)}, kind) do update set
        attributions = t.attributions + excluded.attributions,
        success_count = t.success_count + excluded.success_count,
        reverted_count = t.reverted_count + excluded.reverted_count
      returning 1
    )`
}

/** FINAL_REFS as a bigint literal (a constant, never input). */
const finalRefs = (tx: Tx) => tx.unsafe(`${FINAL_REFS}::bigint`)

/**
 * A distinct-sender table (scope-refs.ts) and the counts it moves: `keys`
 * name its row, `groups` give the counts table's key columns from the row
 * (`o.`) and a scope key (`s.key`).
 */
type RefsTable = {
  name: string
  refs: string
  keys: ReadonlyArray<[name: string, type: string]>
  counts: string
  groups: ReadonlyArray<[name: string, expression: string]>
}

const CODE_SCOPE_GROUPS: ReadonlyArray<[string, string]> = [
  ['registry', `split_part(s.key, '|', 1)`],
  ['chain_id', `split_part(s.key, '|', 2)::int`],
]

const CODE_SENDERS: RefsTable = {
  name: 'code_senders',
  refs: 'code_day_sender_refs',
  keys: [['code', 'text'], ['day', 'date'], ['sender', 'text']],
  counts: 'code_daily_sender_counts',
  groups: [['code', 'o.code'], ...CODE_SCOPE_GROUPS, ['day', 'o.day']],
}
const WINDOW_SENDERS: RefsTable = {
  name: 'window_senders',
  refs: 'window_sender_refs',
  keys: [['window_name', 'text'], ['sender', 'text']],
  counts: 'sender_window_counts',
  groups: [['window_name', 'o.window_name'], ['scope', 's.key::int']],
}

/** The batch's scope sets (fold.ts) as a relation `(scopes jsonb, id)`: each set's JSON parsed once. */
function scopeSetsCte(tx: Tx, scopeSets: string) {
  return tx`scope_sets as (select * from unnest(${scopeSets}::jsonb[]) with ordinality as s(scopes, id))`
}

/**
 * Each batch member's row in a table, looked up through its primary key
 * (`offset 0` keeps the lookup per member): the statement costs what the
 * batch holds, never what the table holds — a join the planner costs by the
 * table's size read all of it, each commit more as history grew. `tid` lets
 * the update find the row again without a second lookup (the lock taken by
 * holdRefsWritersAlone keeps it where it is).
 */
function memberRows(tx: Tx, table: string, keys: ReadonlyArray<[name: string, type: string]>, value: string, members: ReturnType<typeof folded>) {
  const names = keys.map(([name]) => name)
  const matches = tx.unsafe(names.map((name) => `t.${name} = d.${name}`).join(' and '))
  return tx`
    select d.*, t.tid, t.${tx(value)} as old
    from (select * from ${members}) as d
    left join lateral (select t.ctid as tid, t.${tx(value)} from ${tx(table)} t where ${matches} offset 0) as t on true`
}

/**
 * Final rows' members into a distinct-sender table (final-refs.ts): each
 * member's scopes (its scope set, every one at FINAL_REFS) against what the
 * table held before this statement (`old`, read alone: holdRefsWritersAlone).
 * A new member is inserted; a member lacking FINAL_REFS in a scope gets it
 * added; a member already final in every scope is only read. A scope whose
 * value was 0 or less (absent) counts one sender more: new members are
 * counted per scope set, before their scopes are spelled out.
 */
function refsCtes(tx: Tx, table: RefsTable, columns: ColumnLiterals) {
  // names and expressions are this module's constants, never input
  const keys = tx.unsafe(table.keys.map(([name]) => name).join(', '))
  const keysOf = (alias: string) => tx.unsafe(table.keys.map(([name]) => `${alias}.${name}`).join(', '))
  const rowKeys = tx.unsafe(table.keys.filter(([name]) => name !== 'sender').map(([name]) => name).join(', '))
  const groupNames = tx.unsafe(table.groups.map(([name]) => name).join(', '))
  const groupValues = tx.unsafe(table.groups.map(([name, expression]) => `${expression} as ${name}`).join(', '))
  const old = tx(`${table.name}_old`)
  const lacksFinal = (refs: string) => tx`coalesce((${tx.unsafe(refs)} ->> s.key)::bigint, 0) < ${finalRefs(tx)}`
  return tx`
    ${old} as (${memberRows(tx, table.refs, table.keys, 'refs', folded(tx, columns, [...table.keys, ['scope_set', 'int']]))}),
    ${tx(`${table.name}_fresh`)} as (
      insert into ${tx(table.refs)} (${keys}, refs)
      select ${keysOf('o')}, ss.scopes from ${old} o join scope_sets ss on ss.id = o.scope_set where o.old is null order by ${keysOf('o')}
      returning 1
    ),
    ${tx(`${table.name}_topped`)} as (
      update ${tx(table.refs)} t
      set refs = t.refs || (
        select jsonb_object_agg(s.key, coalesce((t.refs ->> s.key)::bigint, 0) + ${finalRefs(tx)}) from jsonb_object_keys(o.scopes) as s(key) where ${lacksFinal('t.refs')})
      from (select o.tid, o.old, ss.scopes from ${old} o join scope_sets ss on ss.id = o.scope_set where o.old is not null) as o
      where t.ctid = o.tid and exists (select 1 from jsonb_object_keys(o.scopes) as s(key) where ${lacksFinal('o.old')})
      returning 1
    ),
    ${tx(`${table.name}_counts`)} as (
      insert into ${tx(table.counts)} as t (${groupNames}, senders)
      select ${groupNames}, sum(members)::bigint
      from (
        select ${groupValues}, o.members
        from (select ${rowKeys}, scope_set, count(*) as members from ${old} where old is null group by ${rowKeys}, scope_set) as o
        join scope_sets ss on ss.id = o.scope_set cross join lateral jsonb_object_keys(ss.scopes) as s(key)
        union all
        select ${groupValues}, 1
        from ${old} o join scope_sets ss on ss.id = o.scope_set cross join lateral jsonb_object_keys(ss.scopes) as s(key)
        where o.old is not null and coalesce((o.old ->> s.key)::bigint, 0) <= 0
      ) as counted
      group by ${groupNames} order by ${groupNames}
      on conflict (${groupNames}) do update set senders = t.senders + excluded.senders
      returning 1
    )`
}

/** A chain's senders per day: present while final rows hold FINAL_REFS (or tip rows a count) in `attributions`; days a sender window may read only (fold.ts). */
function chainSenderCtes(tx: Tx, columns: ColumnLiterals) {
  const keys: Array<[string, string]> = [['chain_id', 'int'], ['day', 'date'], ['sender', 'text']]
  return tx`
    chain_senders_old as (${memberRows(tx, 'chain_daily_senders', keys, 'attributions', folded(tx, columns, keys))}),
    chain_senders_fresh as (
      insert into chain_daily_senders (chain_id, day, sender, attributions)
      select chain_id, day, sender, ${finalRefs(tx)} from chain_senders_old where old is null order by day, chain_id, sender
      returning 1
    ),
    chain_senders_topped as (
      update chain_daily_senders t set attributions = t.attributions + ${finalRefs(tx)}
      from (select tid from chain_senders_old where old is not null and old < ${finalRefs(tx)}) as o
      where t.ctid = o.tid
      returning 1
    )`
}

/**
 * The windows that move (every bounded sender and code-sender window) hold,
 * per member and scope, the sum of the day members behind it, as the tip
 * path's do: a move takes out the days it leaves by their members
 * (rolling-windows.ts). So a day member this statement makes final in a
 * scope — new, or holding less than FINAL_REFS there before — adds
 * FINAL_REFS to each such window holding its day, once per day. (Presence
 * once per window, as the all-time window keeps it, would be taken out
 * whole with the first day the window leaves.) Read from the members the
 * statement looked up (`code_senders_old`, `chain_senders_old`); the
 * windows are locked FOR SHARE earlier in the transaction (foldContext).
 */
function movingWindowCtes(tx: Tx, everyChain: boolean) {
  const inWindow = tx.unsafe(`(o.day::timestamp at time zone 'UTC') >= w.from_at and (o.day::timestamp at time zone 'UTC') < w.until_at`)
  return tx`
    moving_windows as (select name, subject, from_at, until_at from window_bounds where ready and from_at <> '-infinity'),
    moving_code_sender_deltas as (
      select w.name as window_name, o.code, split_part(s.key, '|', 1) as registry, split_part(s.key, '|', 2)::int as chain_id, o.sender,
        count(*) * ${finalRefs(tx)} as delta
      from code_senders_old o
      join scope_sets ss on ss.id = o.scope_set
      cross join lateral jsonb_object_keys(ss.scopes) as s(key)
      join moving_windows w on w.subject = 'code-sender' and ${inWindow}
      where coalesce((o.old ->> s.key)::bigint, 0) < ${finalRefs(tx)}
      group by 1, 2, 3, 4, 5
    ),
    ${scopedDistinctCtes(tx, {
      name: 'moving_code_senders',
      deltas: 'moving_code_sender_deltas',
      ...WINDOW_CODE_SENDER_TABLES,
    })},
    moving_sender_deltas as (
      select w.name as window_name, s.scope, o.sender, count(*) * ${finalRefs(tx)} as delta
      from chain_senders_old o
      cross join lateral ${chainScopes(tx, 'o.chain_id', everyChain)}
      join moving_windows w on w.subject = 'sender' and ${inWindow}
      where o.old is null or o.old < ${finalRefs(tx)}
      group by 1, 2, 3
    ),
    ${scopedDistinctCtes(tx, {
      name: 'moving_senders',
      deltas: 'moving_sender_deltas',
      ...WINDOW_SENDER_TABLES,
    })}`
}

function codeWindowTotals(tx: Tx, windows: ColumnLiterals) {
  return tx`
    code_windows as (
      insert into code_window_totals as t (window_name, scope, code, registry, transactions, user_operations, reverted)
      select * from ${folded(tx, windows, [
        ['window_name', 'text'],
        ['scope', 'int'],
        ['code', 'text'],
        ['registry', 'text'],
        ['transactions', 'bigint'],
        ['user_operations', 'bigint'],
        ['reverted', 'bigint'],
      ])}
      order by 1, 2, 3, 4
      on conflict (window_name, scope, code, registry) do update set
        transactions = t.transactions + excluded.transactions,
        user_operations = t.user_operations + excluded.user_operations,
        reverted = t.reverted + excluded.reverted
      returning 1
    )`
}

/** One stream event per range and code, staged as one row of aligned arrays (drizzle/0018), and a notification per range. */
function eventCtes(tx: Tx, events: ColumnLiterals) {
  return tx`
    event_rows as (
      select * from ${folded(tx, events, [
        ['chain_id', 'int'],
        ['from_block', 'bigint'],
        ['code', 'text'],
        ['registry', 'text'],
        ['to_block', 'bigint'],
        ['attributions', 'int'],
      ])}
    ),
    staged_events as (
      insert into attribution_events_staged (type, chain_ids, codes, registries, from_blocks, to_blocks, attributions)
      select 'commit', array_agg(chain_id), array_agg(code), array_agg(registry), array_agg(from_block), array_agg(to_block), array_agg(attributions)
      from (select * from event_rows order by chain_id, from_block, code, registry) as ordered
      having count(*) > 0
      returning 1
    ),
    notified as (
      select pg_notify(${ATTRIBUTION_EVENTS_CHANNEL}, json_build_object('type', 'commit', 'chainId', chain_id, 'fromBlock', from_block)::text)
      from event_rows group by chain_id, from_block
    )`
}
