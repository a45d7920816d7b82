import type { Sql } from '../db/client.js'
import type { Logger } from '../logger.js'
import { ATTRIBUTION_EVENTS_CHANNEL, eventsAfter, eventsVisibleAfter, latestEventId, type AttributionEvent } from '../store/events.js'

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

/** Events read per query while catching up after a notice. */
const READ_PAGE = 500

/** Reads of the new events before live subscribers are sent to resume instead. */
const READ_ATTEMPTS = 4
const READ_RETRY_MS = 250

/**
 * Fans committed and rolled-back attributions out to server-sent-event
 * subscribers. The commit and rollback statements write `attribution_events`
 * rows and NOTIFY in the same transaction. Event ids become visible in
 * order (store/events.ts), so the hub keeps one watermark — the last id it
 * delivered — and on each notice reads every event after it (one query per
 * page whatever the number of subscribers), handing each subscriber the
 * events of its code in id order. A notice lost or merged with others costs
 * nothing: the next read finds everything after the watermark. One LISTEN
 * connection per API process.
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

  function deliver(events: AttributionEvent[]) {
    for (const subscriber of subscribers) {
      for (const event of events) if (subscriber.code === undefined || subscriber.code === event.code) subscriber.send(event)
    }
  }

  /** The last event id delivered to live subscribers; undefined until the hub listens. */
  let delivered: number | undefined

  /** One page of events after the watermark, read again after a failure (a pool connection lost, Postgres restarting) a few times. */
  async function readAfter(afterId: number): Promise<AttributionEvent[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await eventsVisibleAfter(sql, afterId, READ_PAGE)
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

  /**
   * Delivers every event after the watermark, page by page; a failure sends
   * live subscribers to resume. With nobody subscribed the events are not
   * read, the watermark moves to the newest id: a dense backfill writes an
   * event per range and code (~4,400 a range on the dense bench chain), and
   * an API process with no stream client read and parsed them all.
   */
  async function catchUp() {
    if (delivered === undefined) return
    try {
      if (subscribers.size === 0) {
        const latest = await latestEventId(sql)
        // someone subscribed meanwhile: read from the watermark as usual (it gets a few events older than itself, none missing)
        if (subscribers.size === 0) {
          delivered = Math.max(delivered, latest)
          return
        }
      }
      for (;;) {
        const events = await readAfter(delivered)
        if (events.length > 0) {
          deliver(events)
          delivered = events.at(-1)!.id
        }
        if (events.length < READ_PAGE || stopped) return
      }
    } catch (error) {
      // stopped: the process is closing its pool under a read still out; its subscribers were closed already
      if (stopped) return
      logger.error({ err: (error as Error).message }, 'stream: could not read new events')
      resumeEveryone('new events could not be read')
      // they resume from the table; the live watermark moves on to what exists now
      delivered = await latestEventId(sql).catch(() => delivered)
    }
  }

  // reads run one after another, so subscribers see events in id order; notices arriving meanwhile fold into one more read
  let handling = Promise.resolve()
  let readQueued = false
  function readNew() {
    if (readQueued) return
    readQueued = true
    handling = handling.then(async () => {
      readQueued = false
      await catchUp()
    })
  }

  function onNotice() {
    options.onChange?.()
    readNew()
  }

  /** postgres.js re-LISTENs after its connection dropped: notices sent meanwhile were lost, so read what is new. */
  let listenedBefore = false
  function onListen() {
    if (listenedBefore) {
      options.onChange?.()
      readNew()
    }
    listenedBefore = true
  }

  let listening: Promise<void> | undefined
  let stopped = false

  /** LISTENs on first use (and again after a failed attempt), so an API started while Postgres is down still starts. */
  function start(): Promise<void> {
    listening ??= (async () => {
      const listener = await sql.listen(ATTRIBUTION_EVENTS_CHANNEL, onNotice, onListen)
      try {
        // live delivery starts from what exists once LISTEN is in place; a read right after catches a notice that came first
        delivered ??= await latestEventId(sql)
      } catch (error) {
        await listener.unlisten().catch(() => {})
        throw error
      }
      unlisten = listener.unlisten
      if (stopped) void listener.unlisten().catch(() => {})
      readNew()
      heartbeat ??= setInterval(() => {
        for (const subscriber of subscribers) subscriber.heartbeat()
      }, options.heartbeatMs)
      heartbeat.unref()
    })().catch((error: unknown) => {
      listening = undefined
      throw error
    })
    return listening
  }

  /**
   * Events after `lastEventId` (a resuming client), oldest first — or, when
   * they cannot all be given (more than MAX_REPLAY, or some already pruned),
   * `incomplete` with the newest id to go on from.
   */
  async function replay(lastEventId: number, code: string | undefined): Promise<{ events: AttributionEvent[] } | { incomplete: string; latestId: number }> {
    const found = await eventsAfter(sql, { afterId: lastEventId, code, limit: MAX_REPLAY + 1 })
    const latestId = Math.max(found.latestId, lastEventId)
    if (lastEventId < found.prunedThrough) return { incomplete: 'events after Last-Event-ID were pruned (kept 7 days)', latestId }
    if (found.events.length > MAX_REPLAY) return { incomplete: `more than ${MAX_REPLAY} events were missed`, latestId }
    return { events: found.events }
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
    let last = lastEventId
    try {
      const missed = await replay(lastEventId, subscriber.code)
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
    // the replay read the table, which may be ahead of the hub's own reads: what the hub delivers later that
    // the replay already sent is skipped, so the client sees every id once and in order
    const live: Subscriber = {
      ...subscriber,
      send: (event) => {
        if (event.id <= last) return
        last = event.id
        subscriber.send(event)
      },
    }
    subscribers.add(live)
    return () => subscribers.delete(live)
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
