import type { Sql } from '../db/client.js'
import type { Logger } from '../logger.js'
import { ATTRIBUTION_EVENTS_CHANNEL } from '../store/commit.js'

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

export type Subscriber = {
  code: string | undefined
  send(event: AttributionEvent): void
  /** What was missed cannot be replayed: re-read the API, and go on from event `latestId`. */
  reset(reason: string, latestId: number): void
  heartbeat(): void
  close(): void
}

/** Thrown when the hub already serves its maximum of subscribers. */
export class TooManySubscribersError extends Error {
  override name = 'TooManySubscribersError'
}

/** Most events replayed to a client resuming with Last-Event-ID; past that it gets a reset and re-reads the API. */
export const MAX_REPLAY = 1_000

/** Reads of a notice's events before live subscribers are sent to resume instead. */
const READ_ATTEMPTS = 4
const READ_RETRY_MS = 250

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

type Notice = { type: 'commit' | 'rollback'; chainId: number; fromBlock: number; minId: number; maxId: number }

/**
 * Fans committed and rolled-back attributions out to server-sent-event
 * subscribers. The commit and rollback statements write `attribution_events`
 * rows and NOTIFY in the same transaction, so a notice arrives only for
 * events that committed; the hub reads them once per notice (one query
 * whatever the number of subscribers) and hands each subscriber the events
 * of its code. One LISTEN connection per API process.
 */
export function createStreamHub(options: {
  sql: Sql
  maxSubscribers: number
  heartbeatMs: number
  logger: Logger
  /** Called for every notice, before its events are read: something committed or rolled back. */
  onChange?: () => void
}) {
  const { sql, logger } = options
  const subscribers = new Set<Subscriber>()
  let unlisten: (() => Promise<void>) | undefined
  let heartbeat: NodeJS.Timeout | undefined

  async function eventsOf(notice: Notice): Promise<AttributionEvent[]> {
    const rows = await sql<EventRow[]>`
      select id, type, chain_id, code, registry, from_block, to_block, attributions, created_at from attribution_events
      where id between ${notice.minId} and ${notice.maxId} and type = ${notice.type} and chain_id = ${notice.chainId} and from_block = ${notice.fromBlock}
      order by id`
    return rows.map(toEvent)
  }

  function deliver(events: AttributionEvent[]) {
    for (const subscriber of subscribers) {
      for (const event of events) if (subscriber.code === undefined || subscriber.code === event.code) subscriber.send(event)
    }
  }

  /**
   * The notified events, read again after a failure (a pool connection
   * lost, Postgres restarting) a few times before giving up.
   */
  async function readNotified(notice: Notice): Promise<AttributionEvent[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await eventsOf(notice)
      } catch (error) {
        if (attempt >= READ_ATTEMPTS || stopped) throw error
        await new Promise((resolve) => setTimeout(resolve, READ_RETRY_MS * attempt))
      }
    }
  }

  /**
   * Subscribers that may have missed events are closed: EventSource
   * reconnects with Last-Event-ID and the replay, read from the table,
   * gives them what they missed — nothing is dropped silently.
   */
  function resumeEveryone(reason: string) {
    if (subscribers.size === 0) return
    logger.warn({ subscribers: subscribers.size, reason }, 'stream: closing subscribers so they resume with Last-Event-ID')
    for (const subscriber of subscribers) subscriber.close()
    subscribers.clear()
  }

  // notices are handled one after another so subscribers see events in commit order
  let handling = Promise.resolve()
  function onNotice(payload: string) {
    options.onChange?.()
    handling = handling.then(async () => {
      try {
        deliver(await readNotified(JSON.parse(payload) as Notice))
      } catch (error) {
        logger.error({ err: (error as Error).message }, 'stream: could not read notified events')
        resumeEveryone('notified events could not be read')
      }
    })
  }

  /** postgres.js re-LISTENs after its connection dropped; notices sent meanwhile were lost. */
  let listenedBefore = false
  function onListen() {
    if (listenedBefore) {
      options.onChange?.()
      resumeEveryone('the LISTEN connection was re-established; notices may have been lost')
    }
    listenedBefore = true
  }

  let listening: Promise<void> | undefined
  let stopped = false

  /** LISTENs on first use (and again after a failed attempt), so an API started while Postgres is down still starts. */
  function start(): Promise<void> {
    listening ??= sql.listen(ATTRIBUTION_EVENTS_CHANNEL, onNotice, onListen).then(
      (listener) => {
        unlisten = listener.unlisten
        if (stopped) void listener.unlisten().catch(() => {})
        heartbeat ??= setInterval(() => {
          for (const subscriber of subscribers) subscriber.heartbeat()
        }, options.heartbeatMs)
        heartbeat.unref()
      },
      (error: unknown) => {
        listening = undefined
        throw error
      },
    )
    return listening
  }

  /**
   * Events after `lastEventId` (a resuming client), oldest first — or, when
   * they cannot all be given (more than MAX_REPLAY, or some already pruned),
   * `incomplete` with the newest id to go on from.
   */
  async function replay(lastEventId: number, code: string | undefined): Promise<{ events: AttributionEvent[] } | { incomplete: string; latestId: number }> {
    const [[state], rows] = await Promise.all([
      sql<{ pruned: number; latest: number }[]>`
        select (select pruned_through from stream_retention where id = 1)::float8 as pruned,
               (select coalesce(max(id), 0) from attribution_events)::float8 as latest`,
      sql<EventRow[]>`
        select id, type, chain_id, code, registry, from_block, to_block, attributions, created_at from attribution_events
        where id > ${lastEventId} ${code === undefined ? sql`` : sql`and code = ${code}`}
        order by id limit ${MAX_REPLAY + 1}`,
    ])
    const latestId = Math.max(state!.latest, lastEventId)
    if (lastEventId < (state!.pruned ?? 0)) return { incomplete: 'events after Last-Event-ID were pruned (kept 7 days)', latestId }
    if (rows.length > MAX_REPLAY) return { incomplete: `more than ${MAX_REPLAY} events were missed`, latestId }
    return { events: rows.map(toEvent) }
  }

  /**
   * Adds a subscriber; with `lastEventId` it first gets what it missed, or
   * a reset when that cannot be replayed whole (it re-reads the API and goes
   * on live). Live events arriving meanwhile are held and sent after the
   * replay, without repeats, so the client sees every id once and in order.
   */
  async function subscribe(subscriber: Subscriber, lastEventId?: number): Promise<() => void> {
    if (subscribers.size >= options.maxSubscribers) throw new TooManySubscribersError(`at most ${options.maxSubscribers} stream subscribers`)
    await start()
    if (lastEventId === undefined) {
      subscribers.add(subscriber)
      return () => subscribers.delete(subscriber)
    }
    const held: AttributionEvent[] = []
    const holding: Subscriber = { ...subscriber, send: (event) => held.push(event) }
    subscribers.add(holding)
    try {
      const missed = await replay(lastEventId, subscriber.code)
      let last = lastEventId
      if ('incomplete' in missed) {
        subscriber.reset(missed.incomplete, missed.latestId)
        last = missed.latestId
      }
      for (const event of ['events' in missed ? missed.events : [], held.sort((a, b) => a.id - b.id)].flat()) {
        if (event.id <= last) continue
        subscriber.send(event)
        last = event.id
      }
    } finally {
      subscribers.delete(holding)
    }
    subscribers.add(subscriber)
    return () => subscribers.delete(subscriber)
  }

  async function stop() {
    stopped = true
    clearInterval(heartbeat)
    for (const subscriber of subscribers) subscriber.close()
    subscribers.clear()
    await unlisten?.().catch(() => {})
  }

  return { start, subscribe, stop, size: () => subscribers.size }
}

export type StreamHub = ReturnType<typeof createStreamHub>
