import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/logger.js'
import { pruneAttributionEvents, type AttributionEvent } from '../../src/store/events.js'
import { createStreamHub, MAX_REPLAY, type StreamHub } from '../../src/stream/hub.js'
import { cutAndCommit, senderAddress } from '../support/ranges.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'
import { until } from '../support/poll.js'

/**
 * The stream hub when reading a notice's events fails (a pool connection
 * lost, Postgres restarting): it reads again; when the failure outlasts its
 * attempts, live subscribers are closed so they resume with Last-Event-ID —
 * the events reach them either way, none is dropped in silence.
 */
let database: TestDatabase
let hub: StreamHub
let failingReads = 0
let block = 1

/**
 * The hub's client, with the reads of notified events failing while
 * `failingReads` lasts. A read fails when its answer comes back, as when
 * the connection drops mid-read: a read the hub sent before a test set
 * `failingReads` (a notice of the test before, slow to be answered on a
 * busy machine) fails too, and cannot deliver the test's event behind it.
 */
function flakySql(sql: TestDatabase['db']['$client']): TestDatabase['db']['$client'] {
  return new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      const strings = args[0]
      const answer = Reflect.apply(target, thisArg, args)
      if (!(Array.isArray(strings) && strings.join('?').includes('/* stream: live */'))) return answer
      return Promise.resolve(answer).then((rows: unknown) => {
        if (failingReads === 0) return rows
        failingReads--
        throw new Error('connection terminated unexpectedly')
      })
    },
  })
}

function recorder(code: string | undefined) {
  const events: AttributionEvent[] = []
  const resets: Array<{ reason: string; latestId: number }> = []
  let closed = false
  return {
    events,
    resets,
    isClosed: () => closed,
    subscriber: {
      code,
      send: (event: AttributionEvent) => void events.push(event),
      reset: (reason: string, latestId: number) => void resets.push({ reason, latestId }),
      heartbeat: () => {},
      close: () => void (closed = true),
    },
  }
}

async function latestEventId() {
  const [row] = await database.db.$client<{ last: number }[]>`select coalesce(max(id), 0)::int as last from attribution_events`
  return row!.last
}

async function commitOne(code: string) {
  const at = block++
  await cutAndCommit(database.db, {
    chainId: 5,
    fromBlock: at,
    toBlock: at,
    branch: 'a',
    items: [{ tx: `t${at}`, code, sender: senderAddress(1), timestamp: Math.floor(Date.now() / 1000), block: at }],
  })
}

beforeAll(async () => {
  database = await createTestDatabase('stream_resume')
  hub = createStreamHub({ sql: flakySql(database.db.$client), maxSubscribers: 10, heartbeatMs: 60_000, logger: createLogger({ level: 'silent' }) })
  await hub.start()
}, 60_000)

afterAll(async () => {
  await hub?.stop()
  await database?.drop()
})

describe('stream hub, reads of notified events failing', () => {
  it('reads again and delivers the event', async () => {
    const client = recorder('retry')
    const unsubscribe = await hub.subscribe(client.subscriber)
    failingReads = 2
    await commitOne('retry')
    await until('the event arrives', () => client.events.length === 1, { timeoutMs: 10_000, intervalMs: 20 })
    expect(client.events.map((event) => [event.type, event.code, event.attributions])).toEqual([['commit', 'retry', 1]])
    expect(client.isClosed()).toBe(false)
    expect(failingReads).toBe(0)
    unsubscribe()
  })

  it('closes live subscribers when the reads keep failing, and their resume replays the event', async () => {
    const client = recorder('resume')
    await hub.subscribe(client.subscriber)
    const last = await latestEventId()
    failingReads = 100
    await commitOne('resume')
    await until('the subscriber is closed', () => client.isClosed(), { timeoutMs: 10_000, intervalMs: 20 })
    expect(client.events).toEqual([])
    expect(hub.size()).toBe(0)
    failingReads = 0
    // what EventSource does on its own: reconnect with the last id it saw
    const resumed = recorder('resume')
    const unsubscribe = await hub.subscribe(resumed.subscriber, last)
    expect(resumed.events.map((event) => [event.type, event.code, event.attributions])).toEqual([['commit', 'resume', 1]])
    unsubscribe()
  })
})

describe('stream hub, history that cannot be replayed whole', () => {
  it('prunes events past the retention and sends a client resuming from before them a reset, then goes on live', async () => {
    await commitOne('old')
    const before = await latestEventId()
    await commitOne('old')
    const pruneThrough = await latestEventId()
    await commitOne('kept')
    const latest = await latestEventId()
    await database.db.$client`update attribution_events set created_at = now() - interval '8 days' where id <= ${pruneThrough}`
    expect(await pruneAttributionEvents(database.db.$client)).toBeGreaterThanOrEqual(2)
    expect(await database.db.$client`select id from attribution_events where id <= ${pruneThrough}`).toEqual([])

    const stale = recorder(undefined)
    const unsubscribe = await hub.subscribe(stale.subscriber, before)
    expect(stale.resets).toEqual([{ reason: 'events after Last-Event-ID were pruned (kept 7 days)', latestId: latest }])
    expect(stale.events).toEqual([])
    await commitOne('live')
    await until('the live event arrives', () => stale.events.length === 1, { timeoutMs: 10_000, intervalMs: 20 })
    expect(stale.events[0]!.code).toBe('live')
    unsubscribe()

    // a client that saw the last pruned event misses nothing kept: replayed, no reset
    const current = recorder(undefined)
    const unsubscribeCurrent = await hub.subscribe(current.subscriber, pruneThrough)
    expect(current.resets).toEqual([])
    expect(current.events.map((event) => event.code)).toEqual(['kept', 'live'])
    unsubscribeCurrent()
  })

  it('sends a reset instead of a replay longer than MAX_REPLAY', async () => {
    const from = await latestEventId()
    await database.db.$client`
      insert into attribution_events (type, chain_id, code, registry, from_block, to_block, attributions)
      select 'commit', 5, 'busy', 'canonical', n, n, 1 from generate_series(1, ${MAX_REPLAY + 1}) as n`
    const client = recorder(undefined)
    const unsubscribe = await hub.subscribe(client.subscriber, from)
    expect(client.resets).toEqual([{ reason: `more than ${MAX_REPLAY} events were missed`, latestId: await latestEventId() }])
    expect(client.events).toEqual([])
    unsubscribe()
  })
})
