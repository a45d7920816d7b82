import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { rollbackAbove } from '../../src/store/rollback.js'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { cutAndCommit, senderAddress } from '../support/ranges.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'

/**
 * The live stream over the real commit and rollback statements: events
 * arrive for what commits (filtered by code), rollbacks are announced,
 * a client resuming with Last-Event-ID gets exactly what it missed, idle
 * streams get heartbeats, and subscribers beyond the bound are refused.
 */
const CHAIN = 7001

let database: TestDatabase
let api: TestApi

type Frame = { id?: string; event?: string; data?: string; comment?: string }

/** An open SSE connection whose frames are read as they come. */
async function openStream(query = '', headers: Record<string, string> = {}) {
  const controller = new AbortController()
  const response = await fetch(`${api.url}/v1/attribution/stream${query}`, { headers, signal: controller.signal })
  const frames: Frame[] = []
  const waiters: Array<() => void> = []
  let buffer = ''
  const reading = (async () => {
    if (!response.body) return
    const decoder = new TextDecoder()
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true })
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const frame: Frame = {}
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) frame.comment = line.slice(1).trim()
            else {
              const at = line.indexOf(': ')
              ;(frame as Record<string, string>)[line.slice(0, at)] = line.slice(at + 2)
            }
          }
          frames.push(frame)
          waiters.splice(0).forEach((wake) => wake())
        }
      }
    } catch {
      // aborted by close()
    }
  })()
  return {
    response,
    frames,
    events: () => frames.filter((frame) => frame.event).map((frame) => ({ id: Number(frame.id), event: frame.event, ...JSON.parse(frame.data!) })),
    /** Resolves once `predicate` holds for the frames received (the test's own timeout bounds the wait). */
    async until(predicate: (frames: Frame[]) => boolean) {
      while (!predicate(frames)) await new Promise<void>((resolve) => waiters.push(resolve))
    },
    async close() {
      controller.abort()
      await reading
    },
  }
}

async function commit(from: number, to: number, branch: string, codes: string[]) {
  const timestamp = Math.floor(Date.now() / 1000)
  const items = codes.map((code) => ({ tx: `${branch}tx${from}`, code, sender: senderAddress(1), timestamp, block: from }))
  expect((await cutAndCommit(database.db, { chainId: CHAIN, fromBlock: from, toBlock: to, branch, items })).committed).toBe(true)
}

beforeAll(async () => {
  database = await createTestDatabase('stream')
  api = await startTestApi({
    db: database.db,
    databaseUrl: database.url,
    redisUrl: inject('redisUrl'),
    // a cache long enough that only the commit notification can refresh the answers below
    env: { STREAM_MAX_SUBSCRIBERS: '3', STREAM_HEARTBEAT_MS: '300', ANALYTICS_CACHE_MS: '600000' },
  })
}, 60_000)

afterAll(async () => {
  await api?.close()
  await database?.drop()
})

describe('GET /v1/attribution/stream', () => {
  it('sends each commit to the subscribers of its code, then the rollback that undoes it', async () => {
    const alpha = await openStream('?code=alpha')
    const everything = await openStream()
    expect(alpha.response.headers.get('content-type')).toMatch(/^text\/event-stream/)
    await commit(1, 1, 'a', ['alpha', 'beta'])
    await commit(2, 2, 'a', ['beta'])
    await everything.until((frames) => frames.filter((frame) => frame.event).length === 3)
    await alpha.until((frames) => frames.some((frame) => frame.event))
    expect(everything.events().map((e) => [e.event, e.code, e.fromBlock, e.toBlock, e.attributions])).toEqual([
      ['commit', 'alpha', 1, 1, 1],
      ['commit', 'beta', 1, 1, 1],
      ['commit', 'beta', 2, 2, 1],
    ])

    const reserved = await database.db.$client.reserve()
    try {
      await rollbackAbove(reserved, CHAIN, 0)
    } finally {
      reserved.release()
    }
    await alpha.until((frames) => frames.filter((frame) => frame.event).length === 2)
    expect(alpha.events().map((e) => [e.event, e.code, e.chainId, e.fromBlock, e.toBlock, e.attributions])).toEqual([
      ['commit', 'alpha', CHAIN, 1, 1, 1],
      ['rollback', 'alpha', CHAIN, 1, null, 1],
    ])
    await everything.until((frames) => frames.filter((frame) => frame.event).length === 5)
    expect(everything.events().slice(3).map((e) => [e.event, e.code, e.attributions])).toEqual([
      ['rollback', 'alpha', 1],
      ['rollback', 'beta', 2],
    ])
    await Promise.all([alpha.close(), everything.close()])
  })

  it('replays what a client missed after Last-Event-ID, once and in order, then goes on live', async () => {
    const first = await openStream('?code=gamma')
    await commit(10, 10, 'g', ['gamma'])
    await first.until((frames) => frames.some((frame) => frame.event))
    const seen = first.events()[0]!.id
    await first.close()

    await commit(11, 11, 'g', ['gamma'])
    await commit(12, 12, 'g', ['gamma', 'delta'])
    const resumed = await openStream('?code=gamma', { 'last-event-id': String(seen) })
    await resumed.until((frames) => frames.filter((frame) => frame.event).length === 2)
    await commit(13, 13, 'g', ['gamma'])
    await resumed.until((frames) => frames.filter((frame) => frame.event).length === 3)
    const events = resumed.events()
    expect(events.map((e) => e.fromBlock)).toEqual([11, 12, 13])
    expect(events.every((e, index) => e.id > (index === 0 ? seen : events[index - 1]!.id))).toBe(true)
    await resumed.close()
  })

  it('sends heartbeats on an idle stream', async () => {
    const idle = await openStream('?code=nobody')
    await idle.until((frames) => frames.some((frame) => frame.comment === 'heartbeat'))
    expect(idle.frames.filter((frame) => frame.event)).toEqual([])
    await idle.close()
  })

  it('refuses subscribers beyond the bound with 503, and a malformed Last-Event-ID with 400', async () => {
    const open = await Promise.all([openStream(), openStream(), openStream()])
    const refused = await request(`${api.url}/v1/attribution/stream`)
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toBe('5')
    expect(refused.body.error.message).toMatch(/at most 3 stream subscribers/)
    await Promise.all(open.map((stream) => stream.close()))
    const bad = await request(`${api.url}/v1/attribution/stream`, { headers: { 'last-event-id': 'yesterday' } })
    expect([bad.status, bad.body.error.field]).toEqual([400, 'Last-Event-ID'])
  })
})

describe('analytics cache', () => {
  it('answers repeats from memory and drops them when a range commits', async () => {
    const summaryOf = async () => (await request(`${api.url}/v1/analytics/summary?window=24h&chainId=${CHAIN}`)).body.totals.attributions
    const before = await summaryOf()
    // written behind the API's back, without a notification: the cached answer stands
    await database.db.$client`update chain_hourly_totals set attributions = attributions + 1000 where chain_id = ${CHAIN}`
    expect(await summaryOf()).toBe(before)
    await commit(100, 100, 'cache', ['epsilon', 'zeta'])
    await expect.poll(summaryOf).toBe(before === 0 ? 2 : before + 1002)
  })
})
