import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedis } from '../../src/redis/client.js'
import { request, type TestApi } from '../support/api.js'
import { uniqueName } from '../support/services.js'
import { adminClient, appClient, randomWallet, setupNotifications, type NotificationEnv } from './support.js'
import { until } from '../support/poll.js'

/**
 * 20 requests per client IP per window, one counter for the three endpoints,
 * held in Redis so that two API instances enforce it together.
 */
let env: NotificationEnv
let apiKey: string
let appUrl: string

beforeAll(async () => {
  env = await setupNotifications()
  const admin = adminClient(env.api)
  const projectId = await admin.createProject('limited')
  appUrl = await admin.addApp(projectId, 'https://limited.example')
  apiKey = (await admin.createKey(projectId)).apiKey
})

afterAll(async () => {
  await env?.close()
})

/** Two API instances sharing one counter namespace (its own, so tests don't share counts). */
async function startPair(env_: Record<string, string>): Promise<[TestApi, TestApi]> {
  // the counter key lives under QUEUE_PREFIX; a fresh one per pair, cleaned up with the file's prefix
  const prefix = `${env.redis.prefix}-${uniqueName('rl')}`
  const settings = { RATE_LIMIT_MAX: '20', QUEUE_PREFIX: prefix, ...env_ }
  return [await env.startApi(settings), await env.startApi(settings)]
}

/** The i-th call of a rotation through the three endpoints. */
function mixedCall(api: TestApi, index: number) {
  const client = appClient(api, apiKey)
  switch (index % 3) {
    case 0:
      return client.users({ app_url: appUrl })
    case 1:
      return client.status({ app_url: appUrl, wallet_address: randomWallet() })
    default:
      return client.send({ app_url: appUrl, wallet_addresses: [randomWallet()], title: 'Hi', message: 'there' })
  }
}

describe('rate limit', () => {
  it('the 21st request within the window is a 429, across the three endpoints and two instances', async () => {
    const [first, second] = await startPair({})
    for (let index = 0; index < 20; index++) {
      const response = await mixedCall(index % 2 === 0 ? first : second, index)
      expect(response.status, `request ${index + 1}`).toBe(200)
      expect(response.headers.get('x-ratelimit-limit')).toBe('20')
      expect(response.headers.get('x-ratelimit-remaining')).toBe(String(19 - index))
      expect(Number(response.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0)
    }
    for (const [api, index] of [[first, 20], [second, 21], [first, 22]] as const) {
      const response = await mixedCall(api, index)
      expect(response.status).toBe(429)
      expect(response.body).toEqual({ success: false, error: { code: 'rate_limited', message: expect.stringMatching(/more than 20 requests/) } })
      const retryAfter = Number(response.headers.get('retry-after'))
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(60)
      expect(response.headers.get('x-ratelimit-remaining')).toBe('0')
    }
  })

  it('counts requests that fail authentication or validation too', async () => {
    const [api] = await startPair({})
    for (let index = 0; index < 20; index++) {
      const response = await appClient(api, index % 2 ? 'ank_wrong' : apiKey).users({ app_url: index % 2 ? appUrl : 'nope' })
      expect([400, 401]).toContain(response.status)
    }
    expect((await appClient(api, apiKey).users({ app_url: appUrl })).status).toBe(429)
  })

  it('admits requests again once the window has passed', async () => {
    // long enough that 21 requests fit in it even on a busy machine, short enough to wait for
    const [first, second] = await startPair({ RATE_LIMIT_WINDOW_MS: '4000' })
    for (let index = 0; index < 20; index++) expect((await mixedCall(first, index)).status).toBe(200)
    const limited = await mixedCall(second, 20)
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(4)
    await until('the window to reset', async () => (await mixedCall(second, 21)).status === 200, { timeoutMs: 10_000 })
  })

  it('does not limit the admin and platform routes, nor other routes', async () => {
    const [api] = await startPair({ RATE_LIMIT_MAX: '1' })
    expect((await appClient(api, apiKey).users({ app_url: appUrl })).status).toBe(200)
    expect((await appClient(api, apiKey).users({ app_url: appUrl })).status).toBe(429)
    expect((await request(`${api.url}/healthz`)).status).toBe(200)
    const admin = adminClient(api)
    for (let index = 0; index < 3; index++) await admin.createProject(`unlimited ${index}`)
  })

  it('takes the client IP from the socket: X-Forwarded-For is ignored unless TRUST_PROXY is set', async () => {
    const spoofing = (api: TestApi, ip: string) =>
      request(`${api.url}/v1/notifications/app/users?app_url=${encodeURIComponent(appUrl)}`, {
        headers: { 'x-api-key': apiKey, 'x-forwarded-for': ip },
      })

    const [direct] = await startPair({ RATE_LIMIT_MAX: '2' })
    expect((await spoofing(direct, '203.0.113.1')).status).toBe(200)
    expect((await spoofing(direct, '203.0.113.2')).status).toBe(200)
    expect((await spoofing(direct, '203.0.113.3')).status).toBe(429)

    const [behindProxy] = await startPair({ RATE_LIMIT_MAX: '2', TRUST_PROXY: '127.0.0.1' })
    for (const ip of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) expect((await spoofing(behindProxy, ip)).status).toBe(200)
    expect((await spoofing(behindProxy, '203.0.113.1')).status).toBe(200)
    expect((await spoofing(behindProxy, '203.0.113.1')).status).toBe(429)
  })

  it('counts IPv6 clients per /64, so rotating addresses inside one block gains nothing', async () => {
    const from = (api: TestApi, ip: string) =>
      request(`${api.url}/v1/notifications/app/users?app_url=${encodeURIComponent(appUrl)}`, {
        headers: { 'x-api-key': apiKey, 'x-forwarded-for': ip },
      })
    const [behindProxy] = await startPair({ RATE_LIMIT_MAX: '2', TRUST_PROXY: '127.0.0.1' })
    expect((await from(behindProxy, '2001:db8:aa:bb::1')).status).toBe(200)
    expect((await from(behindProxy, '2001:db8:aa:bb::2')).status).toBe(200)
    expect((await from(behindProxy, '2001:db8:aa:bb:ffff::3')).status).toBe(429)
    // another /64 is another client
    expect((await from(behindProxy, '2001:db8:aa:cc::1')).status).toBe(200)
  })

  it('fails open (no 500s) when the rate limiter’s Redis is unreachable', async () => {
    const unreachable = createRedis('redis://127.0.0.1:1', 'request')
    const api = await env.startApi({ RATE_LIMIT_MAX: '1' }, { redis: unreachable })
    try {
      for (let index = 0; index < 3; index++) {
        const response = await appClient(api, apiKey).users({ app_url: appUrl })
        expect(response.status).toBe(200)
        expect(response.headers.get('x-ratelimit-limit')).toBeNull()
      }
    } finally {
      await api.close()
      unreachable.disconnect()
    }
  })
})
