import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRandom, type Random } from '../../devnet/random.js'
import { createLogger } from '../../src/logger.js'
import { commitRanges, type RangeResult } from '../../src/store/commit.js'
import { latestEventId, type AttributionEvent } from '../../src/store/events.js'
import { createStreamHub, type StreamHub } from '../../src/stream/hub.js'
import { cutRange, senderAddress } from '../support/ranges.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'
import { until } from '../support/poll.js'

/**
 * A stream client that disconnects and resumes with Last-Event-ID must end
 * with exactly the index's totals, however commits interleave: ids are given
 * in the order events become visible, so "every event after my last id"
 * cannot skip one that committed later with a smaller id.
 */
let database: TestDatabase
let hub: StreamHub

beforeAll(async () => {
  database = await createTestDatabase('stream_order')
  hub = createStreamHub({ sql: database.db.$client, maxSubscribers: 20, heartbeatMs: 60_000, logger: createLogger({ level: 'silent' }) })
  await hub.start()
}, 60_000)

afterAll(async () => {
  await hub?.stop()
  await database?.drop()
})

/** A stream client as EventSource is one: it keeps the last id it saw and resumes from it. */
function createClient(code?: string) {
  const events: AttributionEvent[] = []
  const resets: string[] = []
  let unsubscribe: (() => void) | undefined
  let lastId = 0
  const subscriber = {
    code,
    send: (event: AttributionEvent) => {
      events.push(event)
      lastId = event.id
    },
    reset: (reason: string) => void resets.push(reason),
    heartbeat: () => {},
    close: () => {
      unsubscribe?.()
      unsubscribe = undefined
    },
  }
  return {
    events,
    resets,
    lastId: () => lastId,
    connected: () => unsubscribe !== undefined,
    async connect(from: number) {
      lastId = from
      unsubscribe = await hub.subscribe(subscriber, from)
    },
    disconnect() {
      unsubscribe?.()
      unsubscribe = undefined
    },
  }
}

/** A subscriber that does nothing with what it is sent. */
const noClient = { code: undefined, send: () => {}, reset: () => {}, heartbeat: () => {}, close: () => {} }

/** Attribution rows per code, as the stream's commit events add them up. */
function totalsOf(events: readonly AttributionEvent[]): Record<string, number> {
  const totals: Record<string, number> = {}
  for (const event of events) totals[event.code] = (totals[event.code] ?? 0) + (event.type === 'commit' ? event.attributions : -event.attributions)
  return totals
}

async function indexTotals(): Promise<Record<string, number>> {
  const rows = await database.db.$client<{ code: string; n: number }[]>`select code, count(*)::int as n from attributions group by code`
  return Object.fromEntries(rows.map((row) => [row.code, row.n]))
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('a hub with nobody subscribed', () => {
  it('does not read the new events (a dense backfill writes thousands a range), and a subscriber joining later gets the events after it joined', async () => {
    // a hub of its own, on a client that counts the live reads it sends
    let liveReads = 0
    let newestIdReads = 0
    const counted = postgres(database.url, {
      max: 2,
      onnotice: () => {},
      debug: (_connection, query) => {
        if (query.includes('stream: live')) liveReads++
        if (query.includes('::float8 as latest from attribution_events')) newestIdReads++ // latestEventId
      },
    })
    const changes: number[] = []
    const quiet = createStreamHub({ sql: counted, maxSubscribers: 5, heartbeatMs: 60_000, logger: createLogger({ level: 'silent' }), onChange: () => changes.push(Date.now()) })
    try {
      await quiet.start()
      // the hub read the newest id once as it started listening
      const newestIdReadsBefore = newestIdReads
      const item = (tx: string, block: number) => ({ tx, code: 'nobody', sender: senderAddress(1), timestamp: 1_760_000_000, block })
      await commitRanges(database.db, [await cutRange(database.db, { chainId: 31, fromBlock: 1, toBlock: 1, branch: 'a', items: [item('n1', 1), item('n2', 1)] })])
      await until('the commit is noticed', () => changes.length >= 1, { timeoutMs: 30_000, intervalMs: 10 })
      // the hub handled the notice: with nobody subscribed it asks for the newest id instead of reading the events,
      // and that read is the last thing it does for this notice (a live read would come only for a subscriber)
      await until('the hub to move its watermark to the newest id', () => newestIdReads > newestIdReadsBefore, { timeoutMs: 30_000, intervalMs: 10 })
      expect(liveReads).toBe(0)

      const events: AttributionEvent[] = []
      const unsubscribe = await quiet.subscribe({ ...noClient, send: (event) => events.push(event) })
      await commitRanges(database.db, [await cutRange(database.db, { chainId: 31, fromBlock: 2, toBlock: 2, branch: 'a', items: [item('n3', 2)] })])
      // waited for by its block: the first commit's event may come first (below), and alone it is not the signal
      await until('the event after joining arrives', () => events.some((event) => event.fromBlock === 2), { timeoutMs: 30_000, intervalMs: 10 })
      unsubscribe()
      // the newest-id read above was sent, maybe not yet applied: a subscriber joining meanwhile is read from the
      // watermark as usual (hub.ts: a few events older than itself, none missing) — at most the first commit's
      const seen = events.map((event) => [event.code, event.fromBlock, event.attributions])
      expect(seen.at(-1)).toEqual(['nobody', 2, 1])
      expect(seen.slice(0, -1)).toEqual(seen.length > 1 ? [['nobody', 1, 2]] : [])
      expect(liveReads).toBeGreaterThan(0)
    } finally {
      await quiet.stop()
      await counted.end()
    }
  })
})

describe('stream ids follow visibility', () => {
  it('an event inserted first but committed last gets an id above the events committed meanwhile, and a resume replays it', async () => {
    const from = await latestEventId(database.db.$client)
    // a commit still running: its events are staged as a commit statement stages them, its transaction not yet committed
    const slow = await database.db.$client.reserve()
    try {
      await slow`begin`
      await slow`insert into attribution_events_staged (type, chain_ids, codes, registries, from_blocks, to_blocks, attributions)
                 values ('commit', '{7}', '{slow}', '{canonical}', '{1}', '{1}', '{3}')`
      // meanwhile another range commits and is visible at once
      const fast = await cutRange(database.db, { chainId: 8, fromBlock: 1, toBlock: 1, branch: 'a', items: [{ tx: 'fast1', code: 'fast', sender: senderAddress(1), timestamp: 1_760_000_000, block: 1 }] })
      await commitRanges(database.db, [fast])

      const client = createClient()
      await client.connect(from)
      await until('the visible event arrives', () => client.events.length === 1, { timeoutMs: 30_000, intervalMs: 10 })
      expect(client.events[0]!.code).toBe('fast')
      client.disconnect()

      await slow`commit`
      const resumed = createClient()
      await resumed.connect(client.lastId())
      expect(resumed.events.map((event) => [event.code, event.attributions])).toEqual([['slow', 3]])
      expect(resumed.events[0]!.id).toBeGreaterThan(client.lastId())
      resumed.disconnect()
    } finally {
      slow.release()
    }
  })

  it('a commit of several ranges and codes gives its events consecutive ids in (chain, block, code) order and leaves nothing staged', async () => {
    const from = await latestEventId(database.db.$client)
    const item = (tx: string, code: string, block: number) => ({ tx, code, sender: senderAddress(1), timestamp: 1_760_000_000, block })
    const later = await cutRange(database.db, { chainId: 41, fromBlock: 5, toBlock: 5, branch: 'a', items: [item('o1', 'zeta', 5), item('o2', 'alpha', 5)] })
    const earlier = await cutRange(database.db, { chainId: 41, fromBlock: 4, toBlock: 4, branch: 'a', items: [item('o3', 'mu', 4), item('o4', 'mu', 4), item('o5', 'beta', 4)] })
    await commitRanges(database.db, [later, earlier])
    const events = await database.db.$client<{ id: number; from_block: number; code: string; attributions: number }[]>`
      select id::float8 as id, from_block::int as from_block, code, attributions from attribution_events where id > ${from} order by id`
    expect(events.map((event) => [event.from_block, event.code, event.attributions])).toEqual([
      [4, 'beta', 1],
      [4, 'mu', 2],
      [5, 'alpha', 1],
      [5, 'zeta', 1],
    ])
    expect(events.map((event) => event.id - events[0]!.id)).toEqual([0, 1, 2, 3])
    const [staged] = await database.db.$client<{ n: number }[]>`select count(*)::int as n from attribution_events_staged`
    expect(staged!.n).toBe(0)
  })

  it('commits in batches and out of order while a client drops and resumes at random ids: its totals equal the index’s', async () => {
    const random: Random = createRandom(21)
    const from = await latestEventId(database.db.$client)
    const before = await indexTotals()
    const codes = ['bc_perf0001', 'bc_perf0002', 'alpha', 'beta', 'gamma']
    // ranges of three chains, cut up front as the follower would
    const ranges: RangeResult[] = []
    for (const chainId of [11, 12, 13]) {
      for (let index = 0; index < 24; index++) {
        const block = 100 + index
        const items = Array.from({ length: random.between(1, 4) }, (_, item) => ({
          tx: `c${chainId}b${block}i${item}`,
          code: random.pick(codes),
          sender: senderAddress(random.between(1, 6)),
          timestamp: 1_760_000_000 + block * 12,
          block,
        }))
        ranges.push(await cutRange(database.db, { chainId, fromBlock: block, toBlock: block, branch: 'a', items }))
      }
    }
    // shuffled, in batches of 1 to 4, four workers at once
    for (let index = ranges.length - 1; index > 0; index--) {
      const other = random.int(index + 1)
      ;[ranges[index], ranges[other]] = [ranges[other]!, ranges[index]!]
    }
    const batches: RangeResult[][] = []
    for (let index = 0; index < ranges.length; ) {
      const size = random.between(1, 4)
      batches.push(ranges.slice(index, index + size))
      index += size
    }
    let reconnects = 0
    let committed = 0
    // a batch waits for the client's drops to keep up (one per three batches), so the drops land among the
    // commits however fast this machine commits; on a quick one the commits were over after three drops
    const workers = Array.from({ length: 4 }, async () => {
      for (let batch = batches.shift(); batch; batch = batches.shift()) {
        const turn = committed++
        await until('the client to drop and resume', () => reconnects >= Math.floor(turn / 3), { timeoutMs: 30_000, intervalMs: 5 })
        for (const outcome of await commitRanges(database.db, batch)) expect(outcome.committed).toBe(true)
      }
    })

    // the client: connected for a few events (or 50 ms, while the commits wait for it), away for a moment,
    // back with the last id it saw
    const client = createClient()
    let committing = true
    const allCommitted = Promise.all(workers).finally(() => {
      committing = false
    })
    await client.connect(from)
    while (committing) {
      const seen = client.events.length
      const stayFor = random.between(1, 6)
      const stayUntil = Date.now() + 50
      await until('some events arrive', () => client.events.length >= seen + stayFor || !committing || Date.now() > stayUntil, {
        timeoutMs: 30_000,
        intervalMs: 10,
      })
      client.disconnect()
      // a pause of random length while away, so commits land between the drop and the resume; it decides nothing
      await sleep(random.between(0, 30)) // sleep-ok: jitter between a drop and a resume, no assertion follows from it
      await client.connect(client.lastId())
      reconnects++
    }
    await allCommitted
    const latest = await latestEventId(database.db.$client)
    await until('the client reaches the latest event', () => client.lastId() >= latest, { timeoutMs: 30_000, intervalMs: 10 })
    client.disconnect()

    expect(reconnects).toBeGreaterThan(3)
    expect(client.resets).toEqual([])
    const ids = client.events.map((event) => event.id)
    expect(ids).toEqual([...ids].sort((a, b) => a - b))
    expect(new Set(ids).size).toBe(ids.length)
    const after = await indexTotals()
    const added = Object.fromEntries(Object.entries(after).map(([code, n]) => [code, n - (before[code] ?? 0)]).filter(([, n]) => n !== 0))
    expect(totalsOf(client.events)).toEqual(added)
  }, 120_000)
})
