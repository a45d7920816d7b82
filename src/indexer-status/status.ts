import type { Sql } from '../db/client.js'

export type ChainStatus = {
  chainId: number
  /** Latest block the follower saw on the node, and when it last recorded it. */
  headBlock: number | null
  headUpdatedAt: string | null
  /** Highest block below which every range is indexed; null before the first range is done. */
  indexedBlock: number | null
  lagBlocks: number | null
  /** Seconds between now and the indexed block's timestamp while behind; 0 when caught up. */
  lagSeconds: number | null
  rangesPending: number
  /** Pending ranges that failed at least STUCK_RANGE_ATTEMPTS times. */
  rangesStuck: number
  /** Work committed during the last 60 seconds. */
  lastMinute: { ranges: number; blocks: number; transactions: number; attributions: number }
  lastError: { message: string; at: string; fromBlock: number; toBlock: number; attempts: number } | null
}

export type IndexerStatus = { stuckAfterAttempts: number; chains: ChainStatus[] }

type Row = {
  chain_id: number
  head_block: number | null
  head_updated_at: string | null
  first_pending: number | null
  last_done: number | null
  pending: number
  stuck: number
  minute_ranges: number
  minute_blocks: number
  minute_transactions: number
  minute_attributions: number
  error_message: string | null
  error_at: string | null
  error_from: number | null
  error_to: number | null
  error_attempts: number | null
}

/**
 * Per chain, one query of index lookups: the head from `chain_state`, the
 * first pending range and the last done one (primary key and the pending
 * index), counts over the pending ranges (bounded by MAX_PENDING_RANGES),
 * the last minute's ranges (`ranges_done_at_idx`) and the latest failure
 * (`ranges_last_error_at_idx`). Chains are the configured ones and any the
 * follower has recorded.
 */
export async function readIndexerStatus(
  sql: Sql,
  options: { chainIds: readonly number[]; stuckAfterAttempts: number; now?: Date },
): Promise<IndexerStatus> {
  const now = options.now ?? new Date()
  const rows = await sql<Row[]>`
    with chain_ids as (
      select chain_id from chain_state union select unnest(${options.chainIds}::int[])
    )
    select c.chain_id, s.head_block, s.updated_at as head_updated_at,
      (select from_block from ranges r where r.chain_id = c.chain_id and r.status = 'pending' order by from_block limit 1) as first_pending,
      (select to_block from ranges r where r.chain_id = c.chain_id and r.status = 'done' order by from_block desc limit 1) as last_done,
      p.pending, p.stuck,
      m.ranges as minute_ranges, m.blocks as minute_blocks, m.transactions as minute_transactions, m.attributions as minute_attributions,
      e.last_error as error_message, e.last_error_at as error_at, e.from_block as error_from, e.to_block as error_to, e.attempts as error_attempts
    from chain_ids c
    left join chain_state s on s.chain_id = c.chain_id
    cross join lateral (
      select count(*)::int as pending, (count(*) filter (where attempts >= ${options.stuckAfterAttempts}))::int as stuck
      from ranges r where r.chain_id = c.chain_id and r.status = 'pending'
    ) p
    cross join lateral (
      select count(*)::int as ranges, coalesce(sum(to_block - from_block + 1), 0)::float8 as blocks,
        coalesce(sum(tx_count), 0)::float8 as transactions, coalesce(sum(attribution_count), 0)::float8 as attributions
      from ranges r where r.chain_id = c.chain_id and r.done_at is not null and r.done_at > ${now.toISOString()}::timestamptz - interval '60 seconds'
    ) m
    left join lateral (
      select last_error, last_error_at, from_block, to_block, attempts from ranges r
      where r.chain_id = c.chain_id and r.last_error_at is not null order by last_error_at desc limit 1
    ) e on true
    order by c.chain_id`
  const indexed = rows.map(indexedBlockOf).filter((entry): entry is { chainId: number; block: number } => entry !== undefined)
  const timestamps = indexed.length
    ? await sql<{ chain_id: number; timestamp: string }[]>`
        select b.chain_id, b.timestamp from blocks b
        join (select unnest(${indexed.map((entry) => entry.chainId)}::int[]) as chain_id, unnest(${indexed.map((entry) => entry.block)}::bigint[]) as number) w
          on b.chain_id = w.chain_id and b.number = w.number`
    : []
  const timeOf = new Map(timestamps.map((row) => [row.chain_id, new Date(row.timestamp)]))
  return {
    stuckAfterAttempts: options.stuckAfterAttempts,
    chains: rows.map((row) => chainStatus(row, timeOf.get(row.chain_id), now)),
  }
}

/** Every block below the first pending range is indexed; with none pending, everything up to the last done range. */
function indexedBlockOf(row: Row): { chainId: number; block: number } | undefined {
  if (row.first_pending !== null) return Number(row.first_pending) > 0 ? { chainId: row.chain_id, block: Number(row.first_pending) - 1 } : undefined
  return row.last_done !== null ? { chainId: row.chain_id, block: Number(row.last_done) } : undefined
}

function chainStatus(row: Row, indexedTime: Date | undefined, now: Date): ChainStatus {
  const head = row.head_block === null ? null : Number(row.head_block)
  const indexed = indexedBlockOf(row)?.block ?? null
  const lagBlocks = head !== null && indexed !== null ? Math.max(0, head - indexed) : null
  // behind: how old the newest indexed block is (pruned blocks leave it unknown)
  const lagSeconds =
    lagBlocks === 0 ? 0 : lagBlocks !== null && indexedTime ? Math.max(0, Math.round((now.getTime() - indexedTime.getTime()) / 1000)) : null
  return {
    chainId: row.chain_id,
    headBlock: head,
    headUpdatedAt: row.head_updated_at === null ? null : new Date(row.head_updated_at).toISOString(),
    indexedBlock: indexed,
    lagBlocks,
    lagSeconds,
    rangesPending: row.pending,
    rangesStuck: row.stuck,
    lastMinute: {
      ranges: row.minute_ranges,
      blocks: row.minute_blocks,
      transactions: row.minute_transactions,
      attributions: row.minute_attributions,
    },
    lastError:
      row.error_message !== null && row.error_at
        ? { message: row.error_message, at: new Date(row.error_at).toISOString(), fromBlock: Number(row.error_from), toBlock: Number(row.error_to), attempts: row.error_attempts ?? 0 }
        : null,
  }
}
