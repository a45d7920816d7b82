import { connect, type Socket } from 'node:net'
import { Writable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedis } from '../../src/redis/client.js'
import { createLogger } from '../../src/logger.js'
import { request, type TestApi } from '../support/api.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { from, limitedApis, refusals } from './support.js'

/**
 * Issue 20's hostile clients against the real server: what one client may
 * hold open (connections, streams), how long a request may take to arrive,
 * how many registrations it may make — each refused past its setting with
 * the shared error body, the refusal counted in `/metrics`, and other
 * clients served meanwhile. Clients are told apart as in production: by the
 * socket address (127.0.0.x, every loopback address reaches the server), or
 * by X-Forwarded-For from the trusted proxy 127.0.0.1.
 */
let database: TestDatabase
let redis: TestRedis
const apis = limitedApis(() => ({ database, redis }))
const startApi = apis.start

beforeAll(async () => {
  ;[database, redis] = await Promise.all([createTestDatabase('limits'), createTestRedis()])
})

afterAll(async () => {
  await apis.close()
  await redis?.cleanup()
  await database?.drop()
})

const portOf = (api: TestApi) => Number(new URL(api.url).port)

/** A raw connection from `localAddress`, collecting what the server sends until it closes. */
function rawConnection(api: TestApi, localAddress: string) {
  const socket: Socket = connect({ host: '127.0.0.1', port: portOf(api), localAddress })
  let received = ''
  socket.on('data', (chunk) => (received += chunk.toString('utf8')))
  socket.on('error', () => {})
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)))
  return { socket, connected, closed, received: () => received }
}

/** A server-sent-event stream opened as `ip`; resolves once its first frame arrived (or with the refusal). */
async function openStream(api: TestApi, ip: string) {
  const controller = new AbortController()
  const response = await fetch(`${api.url}/v1/attribution/stream`, { headers: from(ip), signal: controller.signal })
  if (response.status !== 200) return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json(), close: () => {} }
  const reader = response.body!.getReader()
  await reader.read()
  return { status: 200, retryAfter: null, body: undefined, close: () => controller.abort() }
}

describe('stream subscribers per client (STREAM_MAX_SUBSCRIBERS_PER_IP)', () => {
  it('one client gets 429 past its own streams; other clients keep subscribing; a closed stream frees its slot', async () => {
    const api = await startApi({ STREAM_MAX_SUBSCRIBERS_PER_IP: '3', STREAM_MAX_SUBSCRIBERS: '10' })
    const hog = await Promise.all(Array.from({ length: 6 }, () => openStream(api, '203.0.113.1')))
    expect(hog.map((stream) => stream.status).sort()).toEqual([200, 200, 200, 429, 429, 429])
    const refused = hog.find((stream) => stream.status === 429)!
    expect(refused.retryAfter).toBe('5')
    expect(refused.body).toEqual({
      success: false,
      error: { code: 'rate_limited', message: 'stream: at most 3 open streams per client; retry in 5 s' },
    })
    // another client, and another /64 of IPv6, still subscribe
    const others = [await openStream(api, '203.0.113.2'), await openStream(api, '2001:db8:1:2::1')]
    expect(others.map((stream) => stream.status)).toEqual([200, 200])
    // the same /64 is the same client
    const sameBlock = [await openStream(api, '2001:db8:1:2::2'), await openStream(api, '2001:db8:1:2:ffff::3'), await openStream(api, '2001:db8:1:2::4')]
    expect(sameBlock.map((stream) => stream.status)).toEqual([200, 200, 429])
    hog.find((stream) => stream.status === 200)!.close()
    await expect.poll(async () => {
      const again = await openStream(api, '203.0.113.1')
      again.close()
      return again.status
    }, { timeout: 10_000 }).toBe(200)
    expect((await refusals(api)).stream_per_client).toBeGreaterThanOrEqual(4)
    for (const stream of [...hog, ...others, ...sameBlock]) stream.close()
  })
})

describe('connections per client (HTTP_MAX_CONNECTIONS_PER_IP)', () => {
  it('answers 429 on a connection over the cap and closes it; other clients and the trusted proxy are served', async () => {
    const api = await startApi({ HTTP_MAX_CONNECTIONS_PER_IP: '4' })
    const held = Array.from({ length: 4 }, () => rawConnection(api, '127.0.0.2'))
    await Promise.all(held.map((connection) => connection.connected))
    // the server counts a connection when it accepts it: a request on each shows all four are in
    for (const connection of held) connection.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
    await expect.poll(() => held.every((connection) => connection.received().startsWith('HTTP/1.1 200')), { timeout: 10_000 }).toBe(true)

    const over = rawConnection(api, '127.0.0.2')
    const answer = await over.closed
    expect(answer).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r\n/)
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      success: false,
      error: { code: 'rate_limited', message: 'connection: more than 4 open connections from this client; close some and retry' },
    })
    const other = rawConnection(api, '127.0.0.3')
    other.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    expect(await other.closed).toMatch(/^HTTP\/1\.1 200 OK/)
    // the trusted proxy (127.0.0.1) carries many clients: never capped
    const throughProxy = await Promise.all(Array.from({ length: 8 }, () => request(`${api.url}/healthz`)))
    expect(throughProxy.map((response) => response.status)).toEqual(Array(8).fill(200))

    held[0]!.socket.destroy()
    await expect.poll(async () => {
      const again = rawConnection(api, '127.0.0.2')
      await again.connected
      again.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
      return (await again.closed).slice(0, 12)
    }, { timeout: 10_000 }).toBe('HTTP/1.1 200')
    expect((await refusals(api)).connections_per_client).toBeGreaterThanOrEqual(1)
    for (const connection of held) connection.socket.destroy()
  })
})

describe('requests that never finish arriving (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS)', () => {
  it('answers 408 and closes a body declared longer than sent, and headers that never end', async () => {
    const api = await startApi({ HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '1500' })
    const slowBody = rawConnection(api, '127.0.0.4')
    await slowBody.connected
    slowBody.socket.write('POST /v1/agents/builder-codes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"walletAdd')
    const slowHeaders = rawConnection(api, '127.0.0.5')
    await slowHeaders.connected
    slowHeaders.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ')
    for (const answer of [await slowBody.closed, await slowHeaders.closed]) {
      expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/)
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
        success: false,
        error: { code: 'request_timeout', message: 'request: not received in time' },
      })
    }
    expect((await refusals(api)).request_timeout).toBe(2)
  }, 60_000)
})

describe('registrations per client (REGISTER_RATE_LIMIT_*)', () => {
  const wallet = (i: number) => `0x${(0xa0000 + i).toString(16).padStart(40, '0')}`
  const register = (api: TestApi, ip: string, i: number) =>
    request(`${api.url}/v1/agents/builder-codes`, { method: 'POST', body: { walletAddress: wallet(i) }, headers: from(ip) })
  const rows = async () => Number((await database.db.$client`select count(*)::int as n from builder_codes`)[0]!.n)

  it('refuses a client past its window with 429 and Retry-After, writing nothing; other clients register', async () => {
    const api = await startApi({ REGISTER_RATE_LIMIT_MAX: '5', REGISTER_RATE_LIMIT_WINDOW_MS: '600000' })
    const before = await rows()
    const statuses = []
    for (let i = 0; i < 8; i++) statuses.push((await register(api, '198.51.100.1', i)).status)
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429])
    const refused = await register(api, '198.51.100.1', 100)
    expect(refused.body).toEqual({
      success: false,
      error: { code: 'rate_limited', message: expect.stringMatching(/^registration: more than 5 in 600 s from this client; retry in \d+ s$/) },
    })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(590)
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0')
    expect(await rows()).toBe(before + 5)
    expect((await register(api, '198.51.100.2', 200)).status).toBe(200)
    expect(await rows()).toBe(before + 6)
    expect((await refusals(api)).register_per_client).toBe(4)
  })

  it('counts in this process while Redis is down: no 500, and still no more than the limit', async () => {
    const unreachable = createRedis('redis://127.0.0.1:1', 'request')
    try {
      const api = await startApi({ REGISTER_RATE_LIMIT_MAX: '3' }, { redis: unreachable })
      const statuses = []
      for (let i = 0; i < 5; i++) statuses.push((await register(api, '198.51.100.3', 300 + i)).status)
      expect(statuses).toEqual([200, 200, 200, 429, 429])
    } finally {
      unreachable.disconnect()
    }
  })
})

describe('errors a client causes are the client’s', () => {
  it('logs an upload the client cut off at debug as a client abort, never as a dependency outage', async () => {
    const lines: Array<{ level: number; msg: string }> = []
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line))
        done()
      },
    })
    const api = await startApi({}, { logger: createLogger({ level: 'debug', name: 'abort-test', destination }) })
    const upload = rawConnection(api, '127.0.0.6')
    await upload.connected
    upload.socket.write('POST /v1/agents/builder-codes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"wallet":')
    // the server is reading the body once it logged the request
    await expect.poll(() => lines.some((line) => line.msg === 'incoming request'), { timeout: 10_000 }).toBe(true)
    upload.socket.destroy()
    await expect.poll(() => lines.find((line) => line.msg === 'client aborted its request')?.level, { timeout: 10_000 }).toBe(20)
    expect(lines.filter((line) => line.level >= 50 || /dependency unavailable/.test(line.msg))).toEqual([])
    expect(lines.filter((line) => line.msg === 'client aborted its request')).toHaveLength(1)
    expect((await request(`${api.url}/metrics`)).body).toMatch(/^http_client_aborts_total 1$/m)
  })

  it.each([
    ['a date PostgreSQL cannot read', '+275760-09-13T00:00:00.000Z|1'],
    ['a date in another spelling', '2025-01-01T00:00:00Z|1'],
    ['a negative year', '-000001-01-01T00:00:00.000Z|1'],
    ['an id in another spelling', '2025-01-01T00:00:00.000Z|01'],
  ])('answers 400 naming cursor for an analytics cursor with %s', async (_name, position) => {
    const api = await startApi({})
    const cursor = Buffer.from(position).toString('base64url')
    const response = await request(`${api.url}/v1/analytics/codes/bc_alpha001/attributions?cursor=${cursor}`)
    expect(response.status).toBe(400)
    expect(response.body).toEqual({
      success: false,
      error: { code: 'invalid_request', message: 'cursor: is not a cursor issued for this listing', field: 'cursor' },
    })
  })
})
