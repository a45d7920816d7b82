import type { Sql } from '../db/client.js'

/**
 * The live stream's source: one `attribution_events` row per committed or
 * rolled-back range and code, written by the commit and rollback statements
 * (commit.ts) with a NOTIFY on ATTRIBUTION_EVENTS_CHANNEL in the same
 * transaction, kept STREAM_EVENT_RETENTION_MS for clients that resume.
 */

/** One row of `attribution_events` as the stream sends it. */
export type AttributionEvent = {
  id: number
  type: 'commit' | 'rollback'
  chainId: number
  code: string
  registry: string
  fromBlock: number
  /** Last block of the committed range; null for a rollback (everything from `fromBlock` up went). */
  toBlock: number | null
  /** Attribution rows of the code added (commit) or removed (rollback). */
  attributions: number
  at: string
}

/** The payload of a NOTIFY: the ids of the events one statement wrote. */
export type EventsNotice = { type: 'commit' | 'rollback'; chainId: number; fromBlock: number; minId: number; maxId: number }

type EventRow = {
  id: string | number
  type: 'commit' | 'rollback'
  chain_id: number
  code: string
  registry: string
  from_block: string | number
  to_block: string | number | null
  attributions: number
  created_at: string
}

const toEvent = (row: EventRow): AttributionEvent => ({
  id: Number(row.id),
  type: row.type,
  chainId: row.chain_id,
  code: row.code,
  registry: row.registry,
  fromBlock: Number(row.from_block),
  toBlock: row.to_block === null ? null : Number(row.to_block),
  attributions: row.attributions,
  at: new Date(row.created_at).toISOString(),
})

/** The events a notice announces, oldest first. */
export async function noticedEvents(sql: Sql, notice: EventsNotice): Promise<AttributionEvent[]> {
  const rows = await sql<EventRow[]>`
    select id, type, chain_id, code, registry, from_block, to_block, attributions, created_at from attribution_events
    where id between ${notice.minId} and ${notice.maxId} and type = ${notice.type} and chain_id = ${notice.chainId} and from_block = ${notice.fromBlock}
    order by id`
  return rows.map(toEvent)
}

/**
 * Up to `limit` events after `afterId` (of one code, or all), oldest first,
 * with the newest id there is and the highest id pruned so far: what a
 * resuming client is replayed, or told it cannot be.
 */
export async function eventsAfter(
  sql: Sql,
  query: { afterId: number; code: string | undefined; limit: number },
): Promise<{ events: AttributionEvent[]; latestId: number; prunedThrough: number }> {
  const [[state], rows] = await Promise.all([
    sql<{ pruned: number | null; latest: number }[]>`
      select (select pruned_through from stream_retention where id = 1)::float8 as pruned,
             (select coalesce(max(id), 0) from attribution_events)::float8 as latest`,
    sql<EventRow[]>`
      select id, type, chain_id, code, registry, from_block, to_block, attributions, created_at from attribution_events
      where id > ${query.afterId} ${query.code === undefined ? sql`` : sql`and code = ${query.code}`}
      order by id limit ${query.limit}`,
  ])
  return { events: rows.map(toEvent), latestId: state!.latest, prunedThrough: state!.pruned ?? 0 }
}

/** Channel the commit and rollback statements notify; the live stream listens on it. */
export const ATTRIBUTION_EVENTS_CHANNEL = 'attribution_events'

/** How long the stream's events are kept for clients resuming with Last-Event-ID. */
export const STREAM_EVENT_RETENTION_MS = 7 * 24 * 3_600_000

/**
 * Deletes stream events older than the retention and records the highest id
 * deleted, so a client resuming from before it is told to re-read rather
 * than replayed a partial history. Walks the oldest ids only: what is left
 * after the last prune. Returns how many events went.
 */
export async function pruneAttributionEvents(sql: Sql, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - STREAM_EVENT_RETENTION_MS).toISOString()
  const [row] = await sql<{ pruned: number }[]>`
    with first_kept as (
      select id from attribution_events where created_at >= ${cutoff}::timestamptz order by id limit 1
    ),
    gone as (
      delete from attribution_events
      where id < coalesce((select id from first_kept), (select max(id) + 1 from attribution_events))
      returning id
    ),
    recorded as (
      update stream_retention set pruned_through = greatest(pruned_through, (select max(id) from gone))
      where id = 1 and exists (select 1 from gone)
      returning 1
    )
    select (select count(*) from gone)::int as pruned, (select count(*) from recorded) as recorded`
  return row!.pruned
}
