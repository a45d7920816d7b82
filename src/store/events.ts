import { registryLabel } from '../contract/schemas.js'
import type { Sql } from '../db/client.js'

/**
 * The live stream's source: one `attribution_events` row per committed or
 * rolled-back range and code, written by the commit and rollback statements
 * (commit.ts) with a NOTIFY on ATTRIBUTION_EVENTS_CHANNEL in the same
 * transaction, kept STREAM_EVENT_RETENTION_MS for clients that resume.
 *
 * Ids are given in the order events become visible, not the order they were
 * inserted: a trigger renumbers each event at its transaction's commit, under
 * a lock held until the commit is visible (drizzle/0017_stream_ids_at_commit.sql).
 * So once an id can be read, no smaller id appears later, and "every event
 * after N" — a resume, or the hub's next read — misses nothing however the
 * commits interleave. The ids a NOTIFY carries are the placeholders taken at
 * insert: a notice only says that something committed.
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

/** The payload of a NOTIFY, one per range: what changed, not the events' ids (they are given at commit, after the statement). */
export type EventsNotice = { type: 'commit' | 'rollback'; chainId: number; fromBlock: number }

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
  // the address of a custom registry is stored lowercase; answers spell it EIP-55
  registry: registryLabel(row.registry),
  fromBlock: Number(row.from_block),
  toBlock: row.to_block === null ? null : Number(row.to_block),
  attributions: row.attributions,
  at: new Date(row.created_at).toISOString(),
})

/** The newest event id there is (0 for none): where a live reader starts. */
export async function latestEventId(sql: Sql): Promise<number> {
  const [row] = await sql<{ latest: number }[]>`select coalesce(max(id), 0)::float8 as latest from attribution_events`
  return row!.latest
}

/**
 * Up to `limit` events of every code after `afterId`, oldest first: the live
 * reader's next step. Ids are visible in order, so reading on from the last
 * id returned never skips an event.
 */
export async function eventsVisibleAfter(sql: Sql, afterId: number, limit: number): Promise<AttributionEvent[]> {
  const rows = await sql<EventRow[]>`
    select /* stream: live */ id, type, chain_id, code, registry, from_block, to_block, attributions, created_at from attribution_events
    where id > ${afterId} order by id limit ${limit}`
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
