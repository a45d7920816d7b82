import type { Hex } from 'viem'
import type postgres from 'postgres'

/**
 * The `ranges` table: the follower's plan of what to index and the
 * checkpoint of what has been indexed. Functions take any postgres.js
 * handle (pool, reserved connection or transaction).
 */
type Sql = postgres.Sql | postgres.TransactionSql | postgres.ReservedSql

/**
 * A range job: contiguous blocks pinned to one branch by the parent hash of
 * the first block and the hash of the last. Never single transactions — one
 * job per transaction could not keep up with BullMQ's per-job overhead.
 */
export type RangeJob = {
  chainId: number
  fromBlock: number
  toBlock: number
  parentHash: Hex
  toHash: Hex
}

export type StoredRange = RangeJob & { status: 'pending' | 'done'; mismatch: boolean }

type RangeRow = {
  from_block: string
  to_block: string
  parent_hash: Hex
  to_hash: Hex
  status: 'pending' | 'done'
  mismatch_at: Date | null
}

function toRange(chainId: number, row: RangeRow): StoredRange {
  return {
    chainId,
    fromBlock: Number(row.from_block),
    toBlock: Number(row.to_block),
    parentHash: row.parent_hash,
    toHash: row.to_hash,
    status: row.status,
    mismatch: row.mismatch_at !== null,
  }
}

/** The newest range: the tip of the branch the follower has planned. */
export async function lastRange(sql: Sql, chainId: number): Promise<StoredRange | undefined> {
  const [row] = await sql<RangeRow[]>`
    select from_block, to_block, parent_hash, to_hash, status, mismatch_at
    from ranges where chain_id = ${chainId} order by from_block desc limit 1`
  return row ? toRange(chainId, row) : undefined
}

export async function pendingRanges(sql: Sql, chainId: number, limit: number): Promise<StoredRange[]> {
  const rows = await sql<RangeRow[]>`
    select from_block, to_block, parent_hash, to_hash, status, mismatch_at
    from ranges where chain_id = ${chainId} and status = 'pending'
    order by from_block limit ${limit}`
  return rows.map((row) => toRange(chainId, row))
}

export async function countPending(sql: Sql, chainId: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from ranges where chain_id = ${chainId} and status = 'pending'`
  return row!.n
}

/** The lowest range a worker flagged because its node served another branch. */
export async function firstFlaggedRange(sql: Sql, chainId: number): Promise<StoredRange | undefined> {
  const [row] = await sql<RangeRow[]>`
    select from_block, to_block, parent_hash, to_hash, status, mismatch_at
    from ranges where chain_id = ${chainId} and mismatch_at is not null
    order by from_block limit 1`
  return row ? toRange(chainId, row) : undefined
}

export async function clearMismatchFlags(sql: Sql, chainId: number): Promise<void> {
  await sql`update ranges set mismatch_at = null where chain_id = ${chainId} and mismatch_at is not null`
}

export async function insertRanges(sql: Sql, ranges: readonly RangeJob[]): Promise<void> {
  if (ranges.length === 0) return
  const rows = ranges.map((r) => ({
    chain_id: r.chainId,
    from_block: r.fromBlock,
    to_block: r.toBlock,
    parent_hash: r.parentHash,
    to_hash: r.toHash,
  }))
  await sql`insert into ranges ${sql(rows)} on conflict (chain_id, from_block) do nothing`
}

/**
 * Serializes the transactions that replace a chain's ranges: a split
 * (splitRange) and a rollback (rollback.ts), until they commit. A rollback
 * locks the ranges above its ancestor and then deletes them; the pieces a
 * split inserted in between were not among the rows it locked, so a worker
 * could commit one before the delete and leave its rows behind. Taken first
 * by both, the lock makes one wait for the other.
 */
export async function lockRangeReplacements(sql: Sql, chainId: number): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`range_replacements:${chainId}`}, 0))`
}

/**
 * Replaces a pending range by `pieces` (contiguous, same first block, same
 * last block and hash: RangeTooDenseError), in one transaction: the range's
 * row becomes the first piece and the others are added. False when the
 * range is no longer pending on its branch (indexed, split or replaced
 * meanwhile), and nothing changes.
 */
export async function splitRange(sql: postgres.Sql, job: RangeJob, pieces: readonly RangeJob[]): Promise<boolean> {
  const [first, ...rest] = pieces
  if (!first || first.fromBlock !== job.fromBlock || pieces.at(-1)!.toBlock !== job.toBlock || pieces.at(-1)!.toHash !== job.toHash) {
    throw new Error(`pieces of range ${job.fromBlock}-${job.toBlock} do not cover it`)
  }
  return sql.begin(async (tx) => {
    await lockRangeReplacements(tx, job.chainId)
    const [row] = await tx`
      update ranges set to_block = ${first.toBlock}, to_hash = ${first.toHash}, attempts = 0, last_error = null, last_error_at = null
      where chain_id = ${job.chainId} and from_block = ${job.fromBlock} and to_block = ${job.toBlock} and to_hash = ${job.toHash} and status = 'pending'
      returning 1`
    if (!row) return false
    await insertRanges(tx, rest)
    return true
  })
}

/** Whether a job's range is still waiting to be indexed on the branch it was cut from. */
export async function isRangePending(sql: Sql, job: RangeJob): Promise<boolean> {
  const [row] = await sql`
    select 1 from ranges
    where chain_id = ${job.chainId} and from_block = ${job.fromBlock} and to_hash = ${job.toHash} and status = 'pending'`
  return row !== undefined
}

/** A worker saw another branch for this range: ask the follower to re-check it. */
export async function flagMismatch(sql: Sql, job: RangeJob): Promise<void> {
  await sql`
    update ranges set mismatch_at = now()
    where chain_id = ${job.chainId} and from_block = ${job.fromBlock} and to_hash = ${job.toHash} and status = 'pending'`
}

/** Highest block below which every range is done: the contiguous checkpoint. */
export async function indexedThrough(sql: Sql, chainId: number): Promise<number | undefined> {
  const [row] = await sql<{ through: string | null }[]>`select ${checkpointOf(sql, sql`${chainId}::int`)} as through`
  return row?.through == null ? undefined : Number(row.through)
}

/**
 * The checkpoint of the chain `chainId` (an SQL expression): below the first
 * pending range, or the last range's end — the last by the key (ranges never
 * overlap): `max(to_block)` read every range of the chain.
 */
export function checkpointOf(sql: Sql, chainId: ReturnType<Sql>) {
  return sql`coalesce(
    (select min(from_block) - 1 from ranges r where r.chain_id = ${chainId} and r.status = 'pending'),
    (select to_block from ranges r where r.chain_id = ${chainId} order by from_block desc limit 1)
  )`
}

/** Every chain's last seen head and checkpoint, in one query (the metrics read this per scrape). */
export async function chainsProgress(sql: Sql): Promise<Array<{ chainId: number; head: number; indexed: number | undefined }>> {
  const rows = await sql<{ chain_id: number; head_block: string; through: string | null }[]>`
    select s.chain_id, s.head_block, ${checkpointOf(sql, sql`s.chain_id`)} as through from chain_state s`
  return rows.map((row) => ({ chainId: row.chain_id, head: Number(row.head_block), indexed: row.through === null ? undefined : Number(row.through) }))
}

/** Pending ranges that failed `stuckAfter` times or more, per chain. */
export async function stuckRangeCounts(sql: Sql, stuckAfter: number): Promise<Array<{ chainId: number; stuck: number }>> {
  const rows = await sql<{ chain_id: number; n: number }[]>`
    select chain_id, count(*)::int as n from ranges where status = 'pending' and attempts >= ${stuckAfter} group by chain_id`
  return rows.map((row) => ({ chainId: row.chain_id, stuck: row.n }))
}

/**
 * Records a failed attempt at a pending range and its cause; returns the
 * attempts so far, or undefined when the range is no longer pending on that
 * branch (indexed meanwhile, or replaced by a reorg).
 */
export async function recordRangeFailure(sql: Sql, job: RangeJob, cause: string): Promise<number | undefined> {
  const [row] = await sql<{ attempts: number }[]>`
    update ranges set attempts = attempts + 1, last_error = ${cause.slice(0, 1_000)}, last_error_at = now()
    where chain_id = ${job.chainId} and from_block = ${job.fromBlock} and to_hash = ${job.toHash} and status = 'pending'
    returning attempts`
  return row?.attempts
}

export type StuckRange = { chainId: number; fromBlock: number; toBlock: number; attempts: number; lastError: string | null; lastErrorAt: Date | null }

/** Pending ranges that failed at least `minAttempts` times, oldest first. */
export async function stuckRanges(sql: Sql, minAttempts: number, limit = 20): Promise<StuckRange[]> {
  const rows = await sql<{ chain_id: number; from_block: string; to_block: string; attempts: number; last_error: string | null; last_error_at: Date | string | null }[]>`
    select chain_id, from_block, to_block, attempts, last_error, last_error_at
    from ranges where status = 'pending' and attempts >= ${minAttempts}
    order by chain_id, from_block limit ${limit}`
  return rows.map((row) => ({
    chainId: row.chain_id,
    fromBlock: Number(row.from_block),
    toBlock: Number(row.to_block),
    attempts: row.attempts,
    lastError: row.last_error,
    // the pool may be set to hand timestamps back as text
    lastErrorAt: row.last_error_at === null ? null : new Date(row.last_error_at),
  }))
}

/** The highest range boundary at or below `block`: rollbacks cut the index only at range edges. Read backwards by the key (ranges never overlap). */
export async function rangeBoundaryAtOrBelow(sql: Sql, chainId: number, block: number, floor: number): Promise<number> {
  const [row] = await sql<{ to_block: string }[]>`
    select to_block from ranges where chain_id = ${chainId} and from_block <= ${block} and to_block <= ${block} order by from_block desc limit 1`
  return row ? Number(row.to_block) : floor
}

export type Done = { blocks: number; transactions: number; attributions: number }

/** What the ranges finished since `since` indexed (done_at is set in the commit that counts them). */
export async function doneSince(sql: Sql, chainId: number, since: number): Promise<Done> {
  const [row] = await sql<{ blocks: string | null; txs: string | null; attributions: string | null }[]>`
    select sum(to_block - from_block + 1) as blocks, sum(tx_count) as txs, sum(attribution_count) as attributions
    from ranges where chain_id = ${chainId} and status = 'done' and done_at > ${new Date(since).toISOString()}::timestamptz`
  return { blocks: Number(row?.blocks ?? 0), transactions: Number(row?.txs ?? 0), attributions: Number(row?.attributions ?? 0) }
}
