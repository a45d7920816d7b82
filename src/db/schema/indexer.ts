import { sql } from 'drizzle-orm'
import { VALID_CODE } from '../../attribution/codes.js'
import {
  bigint,
  boolean,
  date,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core'

/** What the follower last saw of each chain. */
export const chainState = pgTable('chain_state', {
  chainId: integer('chain_id').primaryKey(),
  headBlock: bigint('head_block', { mode: 'number' }).notNull(),
  headHash: text('head_hash').notNull(),
  /** Hash of block 0 of the chain this index was built from: a node serving another chain under the same id is caught. */
  genesisHash: text('genesis_hash'),
  /** A reorg the follower refused because it reached below final_through: the block it would roll back to, and since when. */
  refusedRollbackTo: bigint('refused_rollback_to', { mode: 'number' }),
  refusedSince: timestamp('refused_since', { withTimezone: true }),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
})

/**
 * Per chain, the highest block committed by the bulk path (store/bulk-commit.ts): its rows hold their senders
 * without a count, so no rollback may reach below it (a deeper reorg is refused: follower/reconcile.ts). A table
 * of its own: a bulk commit holds its row until it commits, and must not hold up the follower's `chain_state`.
 */
export const chainFinality = pgTable('chain_finality', {
  chainId: integer('chain_id').primaryKey(),
  finalThrough: bigint('final_through', { mode: 'number' }).notNull(),
})

/**
 * Block ranges the follower has cut, with the hashes that pin them to one
 * branch: the parent of the first block and the last block. A range moves
 * from `pending` to `done` in the same transaction that writes what it
 * counted, which makes this table the indexing checkpoint.
 */
export const ranges = pgTable(
  'ranges',
  {
    chainId: integer('chain_id').notNull(),
    fromBlock: bigint('from_block', { mode: 'number' }).notNull(),
    toBlock: bigint('to_block', { mode: 'number' }).notNull(),
    parentHash: text('parent_hash').notNull(),
    toHash: text('to_hash').notNull(),
    status: text('status', { enum: ['pending', 'done'] }).notNull().default('pending'),
    txCount: integer('tx_count'),
    attributionCount: integer('attribution_count'),
    /** Set by a worker whose node served blocks off this range's branch: the follower re-checks it. */
    mismatchAt: timestamp('mismatch_at', { withTimezone: true }),
    /** Failed attempts at indexing this range; past a threshold the range is reported stuck. */
    attempts: integer('attempts').notNull().default(0),
    /** The cause of the latest failed attempt, as the operator should read it. */
    lastError: text('last_error'),
    lastErrorAt: timestamp('last_error_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    doneAt: timestamp('done_at', { withTimezone: true }),
  },
  (t) => [
    primaryKey({ columns: [t.chainId, t.fromBlock] }),
    index('ranges_pending_idx').on(t.chainId, t.fromBlock).where(sql`${t.status} = 'pending'`),
    // the follower asks for the first flagged range at every head: without it, a read of every range
    index('ranges_mismatch_idx').on(t.chainId, t.fromBlock).where(sql`${t.mismatchAt} is not null`),
    // indexer status: throughput of the last minute and the latest failure, without walking every range
    index('ranges_done_at_idx').on(t.chainId, t.doneAt).where(sql`${t.doneAt} is not null`),
    index('ranges_last_error_at_idx').on(t.chainId, t.lastErrorAt).where(sql`${t.lastErrorAt} is not null`),
  ],
)

/** The recent canonical chain as indexed: written with each range, pruned behind the confirmation window. */
export const blocks = pgTable(
  'blocks',
  {
    chainId: integer('chain_id').notNull(),
    number: bigint('number', { mode: 'number' }).notNull(),
    hash: text('hash').notNull(),
    parentHash: text('parent_hash').notNull(),
    timestamp: timestamp('timestamp', { withTimezone: true }).notNull(),
    txCount: integer('tx_count').notNull(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.number] })],
)

/**
 * One row per (transaction or UserOperation, code). The unique key makes a
 * repeated write a no-op, and totals only move by the rows actually inserted.
 */
export const attributions = pgTable(
  'attributions',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    chainId: integer('chain_id').notNull(),
    blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
    blockHash: text('block_hash').notNull(),
    blockTimestamp: timestamp('block_timestamp', { withTimezone: true }).notNull(),
    txHash: text('tx_hash').notNull(),
    txIndex: integer('tx_index').notNull(),
    kind: text('kind', { enum: ['transaction', 'userOperation'] }).notNull(),
    /** Position of the UserOperation in its bundle, or -1 for the transaction itself. */
    userOpIndex: integer('user_op_index').notNull(),
    userOpHash: text('user_op_hash'),
    sender: text('sender').notNull(),
    target: text('target'),
    code: text('code').notNull(),
    codeStatus: text('code_status', { enum: ['registered', 'unregistered', 'invalid', 'custom'] }).notNull(),
    codeWallet: text('code_wallet'),
    schemaId: smallint('schema_id').notNull(),
    registryChainId: bigint('registry_chain_id', { mode: 'number' }),
    registryAddress: text('registry_address'),
    /** Gas of the whole suffix, on every row: each aggregate sums it per code. The suffix itself is in attribution_suffixes. */
    suffixGas: integer('suffix_gas').notNull(),
    status: text('status', { enum: ['success', 'reverted'] }).notNull(),
    /** UserOperationEvent.actualGasCost (wei) for UserOperations. */
    actualGasCost: text('actual_gas_cost'),
  },
  (t) => [
    // keyed by block first: a backfill appends to its right edge instead of writing a random leaf per row, as a
    // key led by the hash did (~6 µs a row, bench/LOG.md), and the rollback's delete above a block reads it. A
    // lookup by transaction hash goes through attribution_suffixes, whose row names the block
    uniqueIndex('attributions_block_unique_idx').on(t.chainId, t.blockNumber, t.txHash, t.userOpIndex, t.code),
    // a hash index: only equality is asked of it, and its small entries stay in memory where a B-tree's random
    // leaves did not (1.2 µs a row less at 1.15M rows, bench/LOG.md)
    index('attributions_user_op_hash_idx').using('hash', t.userOpHash).where(sql`${t.userOpHash} is not null`),
    // a code's attributions newest first, paged by keyset (time, id): attributions_code_page_idx, written by hand in
    // drizzle/0010_code_page_index.sql because it INCLUDEs the page's filter columns, which drizzle's builder cannot say
  ],
)

/**
 * A transaction's own suffix, or one UserOperation's, stored once (issue 20:
 * on every attribution row, a suffix of thousands of codes was stored as many
 * times as it had codes). Written and rolled back with its attribution rows,
 * in the same statement. Keyed by block (chain, block, transaction, op), as
 * the rows are: a backfill appends to the key's right edge, and the
 * rollback's delete above a block reads it. The lookup by transaction hash
 * starts here, through a hash index, and reaches the rows by their block.
 */
export const attributionSuffixes = pgTable(
  'attribution_suffixes',
  {
    chainId: integer('chain_id').notNull(),
    txHash: text('tx_hash').notNull(),
    /** -1 for the transaction itself, else the op's position in the bundle. */
    userOpIndex: integer('user_op_index').notNull(),
    /** The block holding the transaction: a lookup by hash finds its attribution rows by their key (chain, block, hash). */
    blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
    /** Every distinct code of the suffix, in suffix order (at most ATTRIBUTION_LIMITS.maxSuffixCodes). */
    codes: text('codes').array().notNull(),
    suffix: text('suffix').notNull(),
    suffixBytes: integer('suffix_bytes').notNull(),
  },
  (t) => [
    // named: the generated name would pass PostgreSQL's 63-character limit
    primaryKey({ name: 'attribution_suffixes_block_pk', columns: [t.chainId, t.blockNumber, t.txHash, t.userOpIndex] }),
    // a transaction's own suffix by its hash, equality only: a hash index, whose small entries stay in memory where
    // a B-tree led by the hash wrote a random leaf per row (3.5 µs a row at 1.15M rows, bench/LOG.md)
    index('attribution_suffixes_tx_hash_idx').using('hash', t.txHash).where(sql`${t.userOpIndex} = -1`),
  ],
)

/**
 * The namespace a code belongs to: `canonical` for this service's registry
 * (and codes that name no registry), `<chainId>:<address>` for a custom
 * registry named in the suffix. The same text means different builders in
 * different namespaces, so totals are kept apart by it.
 */
export const CANONICAL_REGISTRY = 'canonical'

const totalsColumns = {
  code: text('code').notNull(),
  registry: text('registry').notNull().default(CANONICAL_REGISTRY),
  chainId: integer('chain_id').notNull(),
  kind: text('kind', { enum: ['transaction', 'userOperation'] }).notNull(),
  successCount: bigint('success_count', { mode: 'number' }).notNull().default(0),
  revertedCount: bigint('reverted_count', { mode: 'number' }).notNull().default(0),
  suffixGas: bigint('suffix_gas', { mode: 'number' }).notNull().default(0),
}

/** Per code × chain × day × kind totals: analytics read these, never the attribution rows. */
export const codeDailyTotals = pgTable(
  'code_daily_totals',
  { ...totalsColumns, day: date('day', { mode: 'string' }).notNull() },
  (t) => [primaryKey({ columns: [t.code, t.registry, t.chainId, t.day, t.kind] }), index('code_daily_totals_day_idx').on(t.day)],
)

/** The same totals by hour, so rolling windows (leaderboard 24h) are exact to the hour. */
export const codeHourlyTotals = pgTable(
  'code_hourly_totals',
  { ...totalsColumns, hour: timestamp('hour', { withTimezone: true }).notNull() },
  (t) => [primaryKey({ columns: [t.code, t.registry, t.chainId, t.hour, t.kind] }), index('code_hourly_totals_hour_idx').on(t.hour)],
)

/**
 * Per chain × bucket × kind: attribution rows, and distinct successful and
 * failed transactions / UserOperations (one carrying three codes counts once
 * here, three times in the code totals). Summary figures read these.
 */
const chainTotalsColumns = {
  chainId: integer('chain_id').notNull(),
  kind: text('kind', { enum: ['transaction', 'userOperation'] }).notNull(),
  attributions: bigint('attributions', { mode: 'number' }).notNull().default(0),
  successCount: bigint('success_count', { mode: 'number' }).notNull().default(0),
  revertedCount: bigint('reverted_count', { mode: 'number' }).notNull().default(0),
}

export const chainDailyTotals = pgTable(
  'chain_daily_totals',
  { ...chainTotalsColumns, day: date('day', { mode: 'string' }).notNull() },
  (t) => [primaryKey({ columns: [t.chainId, t.day, t.kind] })],
)

export const chainHourlyTotals = pgTable(
  'chain_hourly_totals',
  { ...chainTotalsColumns, hour: timestamp('hour', { withTimezone: true }).notNull() },
  (t) => [primaryKey({ columns: [t.chainId, t.hour, t.kind] })],
)

/** In the per-code sender tables, `chain_id` 0 counts every chain together (while kept: everyChainScope)… */
export const EVERY_CHAIN = 0
/** …and `registry` '*' every registry namespace of the code together. */
export const ANY_REGISTRY = '*'

/**
 * Whether the every-chain scope (EVERY_CHAIN) of the per code sender tables
 * and the rolling windows is kept: one row. While one chain alone has
 * aggregates it is not — its figures are that chain's (`only_chain`), and
 * writing them twice cost a quarter of every commit. The first commit of
 * another chain builds it from the first chain's rows and sets `kept` for
 * good (src/store/every-chain.ts).
 */
export const everyChainScope = pgTable('every_chain_scope', {
  id: integer('id').primaryKey(),
  kept: boolean('kept').notNull(),
  onlyChain: integer('only_chain'),
})

/**
 * Reference counts by scope, one row per group, as a JSON object from a
 * scope key to the number of attribution rows behind it: a member (a
 * sender) counts in a scope while its number there is above 0. One row
 * holds every scope of its group, so a commit writes one row per group
 * rather than one per scope, and the row's lock serializes concurrent
 * commits of the same group whatever scopes they touch.
 */
export type ScopeRefs = Record<string, number>

/**
 * Exact unique senders (transaction `from`, UserOperation `sender`): per
 * code × UTC day × sender, the attribution rows behind it in each scope
 * `registry|chain_id` — its own registry and chain, every chain (`|0`), any
 * registry (`*|`) and both (`*|0`), so a code's distinct senders read one
 * scope whatever the filters. Commit adds, rollback subtracts; a sender
 * counts in a scope while its number there is above 0.
 */
export const codeDaySenderRefs = pgTable(
  'code_day_sender_refs',
  {
    code: text('code').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    sender: text('sender').notNull(),
    refs: jsonb('refs').$type<ScopeRefs>().notNull(),
  },
  (t) => [primaryKey({ columns: [t.code, t.day, t.sender] })],
)

/**
 * The days of a chain the bulk path has committed blocks of (issue 40): the
 * first and last block seen of each, and whether it is history — older than any
 * rolling window reads day members of (history-days.ts) — so that its
 * final rows put no sender in `code_day_sender_refs`, and its code senders
 * per day are counted from its rows instead, once complete (`rolled_up`).
 */
export const historyDays = pgTable(
  'history_days',
  {
    chainId: integer('chain_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    firstBlock: bigint('first_block', { mode: 'number' }).notNull(),
    lastBlock: bigint('last_block', { mode: 'number' }).notNull(),
    history: boolean('history').notNull(),
    rolledUp: boolean('rolled_up').notNull().default(false),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.day] })],
)

/** Distinct senders per code × registry scope × chain scope × day: moved by code_day_sender_refs scopes crossing 0. */
export const codeDailySenderCounts = pgTable(
  'code_daily_sender_counts',
  {
    code: text('code').notNull(),
    registry: text('registry').notNull(),
    chainId: integer('chain_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    senders: bigint('senders', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.code, t.registry, t.chainId, t.day] })],
)

/**
 * Distinct senders per chain and day (any code): what moves the summary's
 * sender windows (rolling-windows.ts). Final rows of a day before every
 * sender window's start add none (chainSendersReadFrom): no window reads it.
 */
export const chainDailySenders = pgTable(
  'chain_daily_senders',
  {
    chainId: integer('chain_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    sender: text('sender').notNull(),
    attributions: bigint('attributions', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.day, t.chainId, t.sender] })],
)

/**
 * Rolling windows (the leaderboard's and the summary's 24h / 7d / 30d / all,
 * and the window just before each): their totals are kept ready so a read
 * costs the rows it returns, not the days it spans. `from_at`…`until_at` is
 * what the window's rows hold now (`-infinity` / `infinity` for open ends);
 * commits add to every ready window their rows fall in, and moving a window
 * as time passes takes out the buckets it leaves and adds those it enters
 * (src/store/rolling-windows.ts). `ready` is false until first built.
 */
export const windowBounds = pgTable('window_bounds', {
  name: text('name').primaryKey(),
  /**
   * `code`: per code totals (code_window_totals); `sender`: distinct senders
   * (window_sender_refs / sender_window_counts); `code-sender`: a code's distinct senders
   * (window_code_sender_refs / code_sender_window_counts).
   */
  subject: text('subject', { enum: ['code', 'sender', 'code-sender'] }).notNull(),
  fromAt: timestamp('from_at', { withTimezone: true }).notNull(),
  untilAt: timestamp('until_at', { withTimezone: true }).notNull(),
  ready: boolean('ready').notNull().default(false),
})

/** Per window × scope (a chain id, or 0 for every chain) × code × registry namespace. */
export const codeWindowTotals = pgTable(
  'code_window_totals',
  {
    windowName: text('window_name').notNull(),
    scope: integer('scope').notNull(),
    code: text('code').notNull(),
    registry: text('registry').notNull(),
    transactions: bigint('transactions', { mode: 'number' }).notNull(),
    userOperations: bigint('user_operations', { mode: 'number' }).notNull(),
    reverted: bigint('reverted', { mode: 'number' }).notNull(),
    /** What the leaderboard ranks by: successful transactions + UserOperations. */
    total: bigint('total', { mode: 'number' }).generatedAlwaysAs(sql`transactions + user_operations`),
    /** The registry's rule (isValidCode), kept so a ranking does not run a regex per row. */
    valid: boolean('valid').generatedAlwaysAs(sql.raw(`code ~ '${VALID_CODE.source}'`)),
  },
  (t) => [
    primaryKey({ columns: [t.windowName, t.scope, t.code, t.registry] }),
    // the leaderboard's order: its first page is the first rows of this index
    index('code_window_totals_rank_idx').on(t.windowName, t.scope, t.total.desc(), t.code, t.registry),
  ],
)

/** Attribution rows per window × sender, by scope (a chain id, or 0 for every chain): a sender counts while its rows are above 0. */
export const windowSenderRefs = pgTable(
  'window_sender_refs',
  {
    windowName: text('window_name').notNull(),
    sender: text('sender').notNull(),
    refs: jsonb('refs').$type<ScopeRefs>().notNull(),
  },
  (t) => [primaryKey({ columns: [t.windowName, t.sender] })],
)

/** Distinct senders per window × scope: moved by window_sender_refs scopes crossing 0. */
export const senderWindowCounts = pgTable(
  'sender_window_counts',
  {
    windowName: text('window_name').notNull(),
    scope: integer('scope').notNull(),
    senders: bigint('senders', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.windowName, t.scope] })],
)

/** A code's senders per rolling window (the code view's default 30 days), by the scopes of code_day_sender_refs. */
export const windowCodeSenderRefs = pgTable(
  'window_code_sender_refs',
  {
    windowName: text('window_name').notNull(),
    code: text('code').notNull(),
    sender: text('sender').notNull(),
    refs: jsonb('refs').$type<ScopeRefs>().notNull(),
  },
  (t) => [primaryKey({ columns: [t.windowName, t.code, t.sender] })],
)

export const codeSenderWindowCounts = pgTable(
  'code_sender_window_counts',
  {
    windowName: text('window_name').notNull(),
    code: text('code').notNull(),
    registry: text('registry').notNull(),
    chainId: integer('chain_id').notNull(),
    senders: bigint('senders', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.windowName, t.code, t.registry, t.chainId] })],
)

/**
 * What the live stream sends: one row per committed or rolled-back range and
 * code, written in the same transaction as the rows it describes, so a
 * subscriber resuming with Last-Event-ID misses nothing that committed. The
 * statement stages them (the unlogged `attribution_events_staged`, hand-written
 * in drizzle/0018_stream_events_at_commit.sql with the trigger that inserts
 * them at commit, ids in visibility order).
 */
export const attributionEvents = pgTable(
  'attribution_events',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    type: text('type', { enum: ['commit', 'rollback'] }).notNull(),
    chainId: integer('chain_id').notNull(),
    code: text('code').notNull(),
    registry: text('registry').notNull(),
    fromBlock: bigint('from_block', { mode: 'number' }).notNull(),
    toBlock: bigint('to_block', { mode: 'number' }),
    attributions: integer('attributions').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('attribution_events_code_idx').on(t.code, t.id)],
)

/**
 * How far attribution_events have been pruned (one row): a client resuming
 * from an id at or below `pruned_through` may have missed events and is told
 * to re-read instead of being replayed a partial history.
 */
export const streamRetention = pgTable('stream_retention', {
  id: smallint('id').primaryKey().default(1),
  prunedThrough: bigint('pruned_through', { mode: 'number' }).notNull().default(0),
})

/** Suffixes that carried the marker but could not be decoded: counted, never fatal. */
export const malformedSuffixes = pgTable(
  'malformed_suffixes',
  {
    chainId: integer('chain_id').notNull(),
    blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
    txHash: text('tx_hash').notNull(),
    userOpIndex: integer('user_op_index').notNull(),
    reason: text('reason').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.chainId, t.txHash, t.userOpIndex] }),
    index('malformed_suffixes_block_idx').on(t.chainId, t.blockNumber),
  ],
)
