import type { Sql } from '../db/client.js'
import type { Logger } from '../logger.js'
import { ATTRIBUTION_EVENTS_CHANNEL, eventsAfter, noticedEvents, type AttributionEvent, type EventsNotice } from '../store/events.js'

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

  function deliver(events: AttributionEvent[]) {
    for (const subscriber of subscribers) {
      for (const event of events) if (subscriber.code === undefined || subscriber.code === event.code) subscriber.send(event)
    }
  }

  /**
   * The notified events, read again after a failure (a pool connection
   * lost, Postgres restarting) a few times before giving up.
   */
  async function readNotified(notice: EventsNotice): Promise<AttributionEvent[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await noticedEvents(sql, notice)
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
        deliver(await readNotified(JSON.parse(payload) as EventsNotice))
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
