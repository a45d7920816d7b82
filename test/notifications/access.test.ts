import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createDatabase, closeDatabase } from '../../src/db/client.js'
import { createDeliveryQueue } from '../../src/notifications/delivery-queue.js'
import { request, type TestApi } from '../support/api.js'
import {
  adminClient,
  ADMIN_TOKEN,
  appClient,
  PLATFORM_TOKEN,
  platformClient,
  randomWallet,
  setupNotifications,
  startRedisProxy,
  type NotificationEnv,
} from './support.js'

/**
 * Every status of the notification contract, each provoked by its own cause,
 * and the authentication of the admin and platform routes.
 */
let env: NotificationEnv
let api: TestApi
let admin: ReturnType<typeof adminClient>

// project A (whitelisted) with its app and key; the other fixtures are built per test
let appA: string
let keyA: string

beforeAll(async () => {
  env = await setupNotifications()
  api = env.api
  admin = adminClient(api)
  const projectA = await admin.createProject('A')
  appA = await admin.addApp(projectA, 'https://a.example/app')
  keyA = (await admin.createKey(projectA)).apiKey
})

afterAll(async () => {
  await env?.close()
})

const validSend = (appUrl: string) => ({ app_url: appUrl, wallet_addresses: [randomWallet()], title: 'Hi', message: 'Hello' })

describe('authentication of the app endpoints', () => {
  it('401 without x-api-key, on each endpoint', async () => {
    const anonymous = appClient(api, undefined)
    const responses = [
      await anonymous.users({ app_url: appA }),
      await anonymous.status({ app_url: appA, wallet_address: randomWallet() }),
      await anonymous.send(validSend(appA)),
    ]
    for (const response of responses) {
      expect(response.status).toBe(401)
      expect(response.body).toEqual({ success: false, error: { code: 'unauthorized', message: 'x-api-key header is required' } })
    }
  })

  it('401 for a key nobody issued', async () => {
    const response = await appClient(api, 'ank_thisKeyWasNeverIssued').users({ app_url: appA })
    expect(response.status).toBe(401)
    expect(response.body.error.message).toBe('x-api-key is not a valid API key')
  })

  it('401 for a revoked key, while the other keys of the project keep working', async () => {
    const projectId = await admin.createProject('revoking')
    const appUrl = await admin.addApp(projectId, 'https://revoking.example')
    const revoked = await admin.createKey(projectId)
    const kept = await admin.createKey(projectId)
    expect((await appClient(api, revoked.apiKey).users({ app_url: appUrl })).status).toBe(200)

    const revocation = await admin.call('DELETE', `/v1/admin/api-keys/${revoked.keyId}`)
    expect(revocation.status).toBe(200)
    expect(revocation.body).toEqual({ success: true, keyId: revoked.keyId, projectId, revoked: true })

    const response = await appClient(api, revoked.apiKey).users({ app_url: appUrl })
    expect(response.status).toBe(401)
    expect(response.body.error.message).toBe('x-api-key has been revoked')
    expect((await appClient(api, kept.apiKey).users({ app_url: appUrl })).status).toBe(200)
  })

  it('404 when the key’s project was deleted, on each endpoint', async () => {
    const projectId = await admin.createProject('doomed')
    const appUrl = await admin.addApp(projectId, 'https://doomed.example')
    const { apiKey } = await admin.createKey(projectId)
    expect((await admin.call('DELETE', `/v1/admin/projects/${projectId}`)).status).toBe(200)

    const client = appClient(api, apiKey)
    const responses = [
      await client.users({ app_url: appUrl }),
      await client.status({ app_url: appUrl, wallet_address: randomWallet() }),
      await client.send(validSend(appUrl)),
    ]
    for (const response of responses) {
      expect(response.status).toBe(404)
      expect(response.body.error.code).toBe('project_not_found')
    }
  })

  it('403 when the app URL is not in the key’s project', async () => {
    const response = await appClient(api, keyA).users({ app_url: 'https://somebody-else.example' })
    expect(response.status).toBe(403)
    expect(response.body.error.code).toBe('app_not_in_project')
  })

  it('403 when the project is not whitelisted, and 200 once it is', async () => {
    const projectId = await admin.createProject('waiting', false)
    const appUrl = await admin.addApp(projectId, 'https://waiting.example')
    const client = appClient(api, (await admin.createKey(projectId)).apiKey)

    for (const response of [
      await client.users({ app_url: appUrl }),
      await client.status({ app_url: appUrl, wallet_address: randomWallet() }),
      await client.send(validSend(appUrl)),
    ]) {
      expect(response.status).toBe(403)
      expect(response.body.error.code).toBe('project_not_whitelisted')
    }

    const patched = await admin.call('PATCH', `/v1/admin/projects/${projectId}`, { whitelisted: true })
    expect(patched.status).toBe(200)
    expect(patched.body.whitelisted).toBe(true)
    expect((await client.users({ app_url: appUrl })).status).toBe(200)
  })

  it('matches app URLs after normalization (host case, trailing slash, query)', async () => {
    const response = await appClient(api, keyA).users({ app_url: 'HTTPS://A.EXAMPLE/app/?utm=x#top' })
    expect(response.status).toBe(200)
  })
})

describe('project isolation', () => {
  it('a key of project A used with project B’s app gets 403 and leaves B untouched', async () => {
    const projectB = await admin.createProject('B')
    const appB = await admin.addApp(projectB, 'https://b.example')
    const keyB = (await admin.createKey(projectB)).apiKey
    const wallet = randomWallet()
    expect((await platformClient(api).pin(appB, wallet, true, true)).status).toBe(200)
    const countRows = async () =>
      (await env.database.db.$client`select
        (select count(*)::int from notifications) as notifications,
        (select count(*)::int from notification_deliveries) as deliveries,
        (select count(*)::int from notification_inbox) as inbox`)[0]
    const before = await countRows()

    const withKeyA = appClient(api, keyA)
    for (const response of [
      await withKeyA.users({ app_url: appB }),
      await withKeyA.status({ app_url: appB, wallet_address: wallet }),
      await withKeyA.send({ app_url: appB, wallet_addresses: [wallet], title: 'Hijack', message: 'Not yours' }),
    ]) {
      expect(response.status).toBe(403)
      expect(response.body.error.code).toBe('app_not_in_project')
    }
    expect(await countRows()).toEqual(before)
    // B itself still sees its user as it was
    const status = await appClient(api, keyB).status({ app_url: appB, wallet_address: wallet })
    expect(status.body).toEqual({ success: true, appPinned: true, notificationsEnabled: true })
  })
})

describe('bad input is a 400 naming the field', () => {
  const cases: Array<[string, () => Promise<{ status: number; body: any }>, string]> = [
    ['app_url missing', () => appClient(api, keyA).users({}), 'app_url'],
    ['app_url not a URL', () => appClient(api, keyA).users({ app_url: 'not a url' }), 'app_url'],
    ['app_url not http(s)', () => appClient(api, keyA).users({ app_url: 'ftp://a.example/app' }), 'app_url'],
    ['limit 0', () => appClient(api, keyA).users({ app_url: appA, limit: '0' }), 'limit'],
    ['limit negative', () => appClient(api, keyA).users({ app_url: appA, limit: '-5' }), 'limit'],
    ['limit not an integer', () => appClient(api, keyA).users({ app_url: appA, limit: '2.5' }), 'limit'],
    ['limit not a number', () => appClient(api, keyA).users({ app_url: appA, limit: 'ten' }), 'limit'],
    ['notification_enabled not a boolean', () => appClient(api, keyA).users({ app_url: appA, notification_enabled: 'yes' }), 'notification_enabled'],
    ['cursor garbage', () => appClient(api, keyA).users({ app_url: appA, cursor: 'not-a-cursor' }), 'cursor'],
    ['status: wallet_address invalid', () => appClient(api, keyA).status({ app_url: appA, wallet_address: '0x1234' }), 'wallet_address'],
    ['status: wallet_address missing', () => appClient(api, keyA).status({ app_url: appA }), 'wallet_address'],
    ['send: no addresses', () => appClient(api, keyA).send({ ...validSend(appA), wallet_addresses: [] }), 'wallet_addresses'],
    [
      'send: 1,001 addresses',
      () => appClient(api, keyA).send({ ...validSend(appA), wallet_addresses: Array.from({ length: 1001 }, randomWallet) }),
      'wallet_addresses',
    ],
    [
      'send: one bad address among good ones',
      () => appClient(api, keyA).send({ ...validSend(appA), wallet_addresses: [randomWallet(), '0xnothex', randomWallet()] }),
      'wallet_addresses.1',
    ],
    ['send: title of 31 characters', () => appClient(api, keyA).send({ ...validSend(appA), title: 'x'.repeat(31) }), 'title'],
    ['send: title of 31 emoji', () => appClient(api, keyA).send({ ...validSend(appA), title: '👨‍👩‍👧'.repeat(31) }), 'title'],
    ['send: empty title', () => appClient(api, keyA).send({ ...validSend(appA), title: '' }), 'title'],
    ['send: message of 201 characters', () => appClient(api, keyA).send({ ...validSend(appA), message: 'é'.repeat(201) }), 'message'],
    ['send: target_path without leading /', () => appClient(api, keyA).send({ ...validSend(appA), target_path: 'home' }), 'target_path'],
    ['send: target_path to another host', () => appClient(api, keyA).send({ ...validSend(appA), target_path: '//evil.example' }), 'target_path'],
    ['send: target_path of 501 characters', () => appClient(api, keyA).send({ ...validSend(appA), target_path: `/${'p'.repeat(500)}` }), 'target_path'],
    ['send: body not an object', () => appClient(api, keyA).send([1, 2]), 'body'],
  ]

  for (const [name, call, field] of cases) {
    it(name, async () => {
      const response = await call()
      expect(response.status).toBe(400)
      expect(response.body.success).toBe(false)
      expect(response.body.error.code).toBe('invalid_request')
      expect(response.body.error.field).toBe(field)
      expect(response.body.error.message.startsWith(`${field}: `)).toBe(true)
    })
  }

  it('counts emoji as users see them: 30 family emoji make a valid title', async () => {
    const response = await appClient(api, keyA).send({ ...validSend(appA), title: '👨‍👩‍👧'.repeat(30), target_path: `/${'p'.repeat(499)}` })
    expect(response.status).toBe(200)
  })

  it('malformed JSON is a 400 in the shared shape', async () => {
    const response = await request(`${api.url}/v1/notifications/send`, { method: 'POST', rawBody: '{"app_url":', headers: { 'x-api-key': keyA } })
    expect(response.status).toBe(400)
    expect(response.body.success).toBe(false)
  })
})

describe('hostile text costs what its limit allows (issue 11)', () => {
  // each of these once froze the whole API for 11-66 s before its 400; now each is refused after a bounded window
  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['a title of 60,000 🎉', { title: '🎉'.repeat(60_000) }, 'title', 'must be at most 30 characters'],
    ['a message of 40,000 👨‍👩‍👧', { message: '👨‍👩‍👧'.repeat(40_000) }, 'message', 'must be at most 200 characters'],
    ['a target_path of 250,000 characters', { target_path: `/${'é'.repeat(249_999)}` }, 'target_path', 'must be at most 500 characters'],
    [
      'a title of 30 letters each followed by 15,000 combining marks',
      { title: `a${'\u0301'.repeat(15_000)}`.repeat(30) },
      'title',
      'holds a character made of more than 16 code points',
    ],
    [
      'a message of 200 characters of 9 code points each (1,800 > 1,600)',
      { message: `e${'\u0301'.repeat(8)}`.repeat(200) },
      'message',
      'must be at most 1600 code points (8 per character of the 200 allowed)',
    ],
  ]
  for (const [name, fields, field, reason] of cases) {
    it(`400 naming ${field} for ${name}, nothing recorded`, async () => {
      const [before] = await env.database.db.$client<{ n: number }[]>`select count(*)::int as n from notifications`
      const response = await appClient(api, keyA).send({ ...validSend(appA), ...fields })
      expect(response.status).toBe(400)
      expect(response.body).toEqual({ success: false, error: { code: 'invalid_request', message: `${field}: ${reason}`, field } })
      const [after] = await env.database.db.$client<{ n: number }[]>`select count(*)::int as n from notifications`
      expect(after!.n).toBe(before!.n)
    })
  }

  it('a body nested deeper than 32 levels is refused before parsing: 400 naming the body', async () => {
    const depth = 400_000
    const response = await request(`${api.url}/v1/notifications/send`, { method: 'POST', rawBody: `${'['.repeat(depth)}${']'.repeat(depth)}`, headers: { 'x-api-key': keyA } })
    expect(response.status).toBe(400)
    expect(response.body).toEqual({ success: false, error: { code: 'invalid_request', message: 'body: JSON nested deeper than 32 levels' } })
    const strings = await appClient(api, keyA).send({ ...validSend(appA), title: '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[', message: '{'.repeat(200) })
    expect(strings.status).toBe(200)
  })

  it('routes that take a small JSON object refuse a 16 KiB body with 413; send takes up to BODY_LIMIT', async () => {
    const big = { app_url: appA, wallet_address: randomWallet(), padding: 'x'.repeat(16_384) }
    const status = await request(`${api.url}/v1/notifications/app/user/status`, { method: 'POST', body: big, headers: { 'x-api-key': keyA } })
    expect(status.status).toBe(413)
    expect(status.body.error.code).toBe('payload_too_large')
    const send = await appClient(api, keyA).send({ ...validSend(appA), padding: 'x'.repeat(100_000) })
    expect(send.status).toBe(200)
  })
})

describe('dependency failures', () => {
  it('500 from status when the preferences store is unreachable (and 503, not 500, from the other two)', async () => {
    const unreachable = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/nothing', connectTimeoutSeconds: 1 })
    const broken = await env.startApi({}, { db: unreachable })
    try {
      const client = appClient(broken, keyA)
      const status = await client.status({ app_url: appA, wallet_address: randomWallet() })
      expect(status.status).toBe(500)
      expect(status.body).toEqual({
        success: false,
        error: { code: 'preferences_unavailable', message: 'the status lookup failed in the preferences store; retry later' },
      })
      expect((await client.users({ app_url: appA })).status).toBe(503)
    } finally {
      await broken.close()
      await closeDatabase(unreachable)
    }
  })

  it('503 from send when the delivery queue’s Redis is down, with nothing recorded', async () => {
    const proxy = await startRedisProxy(env.redis.url)
    const deliveryQueue = createDeliveryQueue({ redisUrl: proxy.url, prefix: env.redis.prefix })
    const broken = await env.startApi({}, { deliveryQueue })
    try {
      const wallet = randomWallet()
      expect((await platformClient(api).pin(appA, wallet, true, true)).status).toBe(200)
      proxy.cut()
      await assertSendRefusedWithoutRows(broken, wallet)
    } finally {
      await broken.close()
      await deliveryQueue.close()
      await proxy.close()
    }
  })

  it('503 from send when the delivery queue’s Redis hangs, with nothing recorded', async () => {
    const proxy = await startRedisProxy(env.redis.url)
    const deliveryQueue = createDeliveryQueue({ redisUrl: proxy.url, prefix: env.redis.prefix, enqueueTimeoutMs: 2_000 })
    const broken = await env.startApi({}, { deliveryQueue })
    try {
      const wallet = randomWallet()
      expect((await platformClient(api).pin(appA, wallet, true, true)).status).toBe(200)
      // the queue's connection is up (checked first, so a slow connect on a loaded machine is not the hang): the first send goes through
      await deliveryQueue.assertReachable()
      const first = await appClient(broken, keyA).send({ app_url: appA, wallet_addresses: [wallet], title: 'Before', message: 'hang' })
      expect(first.status).toBe(200)
      proxy.freeze()
      await assertSendRefusedWithoutRows(broken, wallet)
    } finally {
      await broken.close()
      await deliveryQueue.close()
      await proxy.close()
    }
  })

  async function assertSendRefusedWithoutRows(server: TestApi, wallet: string) {
    const countRows = async () =>
      (await env.database.db.$client`select
        (select count(*)::int from notifications) as notifications,
        (select count(*)::int from notification_deliveries) as deliveries`)[0]
    const before = await countRows()
    const response = await appClient(server, keyA).send({ app_url: appA, wallet_addresses: [wallet, randomWallet()], title: 'During', message: 'outage' })
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('5')
    expect(response.body.error.code).toBe('delivery_queue_unavailable')
    expect(await countRows()).toEqual(before)
  }
})

describe('admin and platform tokens', () => {
  const adminCalls: Array<[string, string, unknown?]> = [
    ['POST', '/v1/admin/projects', { name: 'x' }],
    ['PATCH', '/v1/admin/projects/00000000-0000-4000-8000-000000000000', { whitelisted: true }],
    ['DELETE', '/v1/admin/projects/00000000-0000-4000-8000-000000000000'],
    ['POST', '/v1/admin/projects/00000000-0000-4000-8000-000000000000/apps', { app_url: 'https://x.example' }],
    ['POST', '/v1/admin/projects/00000000-0000-4000-8000-000000000000/api-keys'],
    ['DELETE', '/v1/admin/api-keys/00000000-0000-4000-8000-000000000000'],
  ]
  const platformCalls: Array<[string, string, unknown?]> = [
    ['PUT', '/v1/platform/pins', { app_url: 'https://x.example', wallet_address: randomWallet(), pinned: true }],
    ['GET', `/v1/platform/inbox?wallet_address=${randomWallet()}`],
  ]
  const wrongHeaders: Array<[string, Record<string, string>]> = [
    ['missing', {}],
    ['wrong', { authorization: 'Bearer not-the-token-at-all-000000' }],
    ['not bearer', { authorization: `Basic ${ADMIN_TOKEN}` }],
    ['the other route group’s token', { authorization: `Bearer ${PLATFORM_TOKEN}` }],
  ]

  for (const [label, headers] of wrongHeaders) {
    it(`admin routes answer 401 to a ${label} token`, async () => {
      for (const [method, path, body] of adminCalls) {
        const response = await request(`${api.url}${path}`, { method, body, headers })
        expect(response.status, `${method} ${path}`).toBe(401)
        expect(response.body.error.code).toBe('unauthorized')
      }
    })
  }

  it('platform routes answer 401 to a missing, wrong or admin token', async () => {
    const attempts: Array<Record<string, string>> = [{}, { authorization: 'Bearer not-the-token-at-all-000000' }, { authorization: `Bearer ${ADMIN_TOKEN}` }]
    for (const headers of attempts) {
      for (const [method, path, body] of platformCalls) {
        const response = await request(`${api.url}${path}`, { method, body, headers })
        expect(response.status, `${method} ${path}`).toBe(401)
      }
    }
  })

  it('with no tokens configured both route groups are off (503)', async () => {
    const unconfigured = await env.startApi({ ADMIN_TOKEN: '', PLATFORM_TOKEN: '' })
    try {
      const adminResponse = await request(`${unconfigured.url}/v1/admin/projects`, { method: 'POST', body: { name: 'x' }, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
      expect(adminResponse.status).toBe(503)
      expect(adminResponse.body.error.code).toBe('not_configured')
      const platformResponse = await request(`${unconfigured.url}/v1/platform/inbox?wallet_address=${randomWallet()}`, { headers: { authorization: `Bearer ${PLATFORM_TOKEN}` } })
      expect(platformResponse.status).toBe(503)
    } finally {
      await unconfigured.close()
    }
  })
})

describe('API key storage', () => {
  it('no column of any table holds an issued key', async () => {
    const projectId = await admin.createProject('storage')
    const issued = [keyA, (await admin.createKey(projectId)).apiKey, (await admin.createKey(projectId)).apiKey]
    const sql = env.database.db.$client
    const columns = await sql<{ table_name: string; column_name: string }[]>`
      select table_name, column_name from information_schema.columns
       where table_schema = 'public' and data_type in ('text', 'character varying', 'jsonb', 'json')`
    expect(columns.some((c) => c.table_name === 'notification_api_keys')).toBe(true)
    for (const { table_name, column_name } of columns) {
      const hits = await sql.unsafe(
        `select count(*)::int as n from "${table_name}" where position($1 in "${column_name}"::text) > 0 or position($2 in "${column_name}"::text) > 0 or position($3 in "${column_name}"::text) > 0`,
        issued,
      )
      expect(hits[0]!.n, `${table_name}.${column_name}`).toBe(0)
    }
    // what is stored is the SHA-256, and the key still works
    const [stored] = await sql`select key_hash from notification_api_keys order by created_at limit 1`
    expect(stored!.key_hash).toMatch(/^[0-9a-f]{64}$/)
    expect((await appClient(api, issued[1]).users({ app_url: appA })).status).toBe(403)
  })
})
