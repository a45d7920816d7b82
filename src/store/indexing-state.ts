import type { Sql } from '../db/client.js'
import { checkpointOf } from './ranges.js'

/** Where indexing of one chain stands, as the store knows it. */
export type ChainIndexingState = {
  chainId: number
  /** Latest block the follower saw on the node, and when it recorded it. */
  head: number | null
  headUpdatedAt: Date | null
  /** The checkpoint: every block up to it is indexed; null before the first range is done. */
  indexed: number | null
  /** The indexed block's timestamp, while its row is kept (pruning drops old blocks). */
  indexedAt: Date | null
  pendingRanges: number
  /** Pending ranges that failed at least `stuckAfterAttempts` times. */
  stuckRanges: number
  /** Work committed during the 60 seconds before `now`. */
  lastMinute: { ranges: number; blocks: number; transactions: number; attributions: number }
  lastError: { message: string; at: Date; fromBlock: number; toBlock: number; attempts: number } | null
}

type Row = {
  chain_id: number
  head_block: string | null
  head_updated_at: string | null
  indexed: string | null
  indexed_at: string | null
  pending: number
  stuck: number
  minute_ranges: number
  minute_blocks: number
  minute_transactions: number
  minute_attributions: number
  error_message: string | null
  error_at: string | null
  error_from: string | null
  error_to: string | null
  error_attempts: number | null
}

/**
 * Per chain, one query of index lookups: the head from `chain_state`, the
 * checkpoint (ranges.ts) and its block's timestamp, counts over the pending
 * ranges (bounded by MAX_PENDING_RANGES), the last minute's ranges
 * (`ranges_done_at_idx`) and the latest failure (`ranges_last_error_at_idx`).
 * Chains are `chainIds` and any the follower has recorded.
 */
export async function indexingState(
  sql: Sql,
  options: { chainIds: readonly number[]; stuckAfterAttempts: number; now: Date },
): Promise<ChainIndexingState[]> {
  const rows = await sql<Row[]>`
    with chain_ids as (
      select chain_id from chain_state union select unnest(${options.chainIds}::int[])
    ),
    checkpoints as (
      select c.chain_id, ${checkpointOf(sql, sql`c.chain_id`)} as indexed from chain_ids c
    )
    select c.chain_id, s.head_block, s.updated_at as head_updated_at, c.indexed, b.timestamp as indexed_at,
      p.pending, p.stuck,
      m.ranges as minute_ranges, m.blocks as minute_blocks, m.transactions as minute_transactions, m.attributions as minute_attributions,
      e.last_error as error_message, e.last_error_at as error_at, e.from_block as error_from, e.to_block as error_to, e.attempts as error_attempts
    from checkpoints c
    left join chain_state s on s.chain_id = c.chain_id
    left join blocks b on b.chain_id = c.chain_id and b.number = c.indexed
    cross join lateral (
      select count(*)::int as pending, (count(*) filter (where attempts >= ${options.stuckAfterAttempts}))::int as stuck
      from ranges r where r.chain_id = c.chain_id and r.status = 'pending'
    ) p
    cross join lateral (
      select count(*)::int as ranges, coalesce(sum(to_block - from_block + 1), 0)::float8 as blocks,
        coalesce(sum(tx_count), 0)::float8 as transactions, coalesce(sum(attribution_count), 0)::float8 as attributions
      from ranges r where r.chain_id = c.chain_id and r.done_at is not null and r.done_at > ${options.now.toISOString()}::timestamptz - interval '60 seconds'
    ) m
    left join lateral (
      select last_error, last_error_at, from_block, to_block, attempts from ranges r
      where r.chain_id = c.chain_id and r.last_error_at is not null order by last_error_at desc limit 1
    ) e on true
    order by c.chain_id`
  return rows.map((row) => ({
    chainId: row.chain_id,
    head: row.head_block === null ? null : Number(row.head_block),
    headUpdatedAt: row.head_updated_at === null ? null : new Date(row.head_updated_at),
    // a first pending range at block 0 leaves nothing indexed
    indexed: row.indexed === null || Number(row.indexed) < 0 ? null : Number(row.indexed),
    indexedAt: row.indexed_at === null ? null : new Date(row.indexed_at),
    pendingRanges: row.pending,
    stuckRanges: row.stuck,
    lastMinute: { ranges: row.minute_ranges, blocks: row.minute_blocks, transactions: row.minute_transactions, attributions: row.minute_attributions },
    lastError:
      row.error_message !== null && row.error_at !== null
        ? { message: row.error_message, at: new Date(row.error_at), fromBlock: Number(row.error_from), toBlock: Number(row.error_to), attempts: row.error_attempts ?? 0 }
        : null,
  }))
}
