import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/logger.js'
import { createStreamHub, type AttributionEvent, type StreamHub } from '../../src/stream/hub.js'
import { cutAndCommit, senderAddress } from '../support/ranges.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'

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

/** The hub's client, with the reads of notified events failing while `failingReads` lasts. */
function flakySql(sql: TestDatabase['db']['$client']): TestDatabase['db']['$client'] {
  return new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      const strings = args[0]
      if (failingReads > 0 && Array.isArray(strings) && strings.join('?').includes('where id between')) {
        failingReads--
        return Promise.reject(new Error('connection terminated unexpectedly'))
      }
      return Reflect.apply(target, thisArg, args)
    },
  })
}

function recorder(code: string) {
  const events: AttributionEvent[] = []
  let closed = false
  return {
    events,
    isClosed: () => closed,
    subscriber: { code, send: (event: AttributionEvent) => void events.push(event), heartbeat: () => {}, close: () => void (closed = true) },
  }
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

async function until(condition: () => boolean, what: string) {
  const deadline = Date.now() + 10_000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
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
    await until(() => client.events.length === 1, 'the event arrives')
    expect(client.events.map((event) => [event.type, event.code, event.attributions])).toEqual([['commit', 'retry', 1]])
    expect(client.isClosed()).toBe(false)
    expect(failingReads).toBe(0)
    unsubscribe()
  })

  it('closes live subscribers when the reads keep failing, and their resume replays the event', async () => {
    const client = recorder('resume')
    await hub.subscribe(client.subscriber)
    const [row] = await database.db.$client<{ last: number }[]>`select coalesce(max(id), 0)::int as last from attribution_events`
    failingReads = 100
    await commitOne('resume')
    await until(() => client.isClosed(), 'the subscriber is closed')
    expect(client.events).toEqual([])
    expect(hub.size()).toBe(0)
    failingReads = 0
    // what EventSource does on its own: reconnect with the last id it saw
    const resumed = recorder('resume')
    const unsubscribe = await hub.subscribe(resumed.subscriber, row!.last)
    expect(resumed.events.map((event) => [event.type, event.code, event.attributions])).toEqual([['commit', 'resume', 1]])
    unsubscribe()
  })
})
