import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { dirname, join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { request } from '../support/api.js'
import {
  adminCalls,
  createSecrets,
  installWriteAudit,
  randomWallet,
  seedNotifications,
  startApiProcess,
  writesSoFar,
  type ApiProcess,
  type NotificationFixture,
} from './support/api-fixture.js'
import { operationsOf } from './support/http-fuzz.js'
import { createFaultReport } from './support/report.js'
import { leakedSecrets } from './support/roles.js'
import { createTrialDatabase, startPrivateServices, type PrivateServices, type TrialDatabase } from './support/services.js'

/**
 * 7. Security, against API processes (every one logging at trace level):
 * keys stored only hashed, revocation effective at once on every instance,
 * a key confined to its own project's apps, admin and platform routes
 * closed without their token, a rate limit that a spoofed X-Forwarded-For
 * cannot get around unless a trusted proxy is configured, and no secret in
 * any log.
 */

let services: PrivateServices
let database: TrialDatabase
const secrets = createSecrets()
const apis: ApiProcess[] = []
let first: ApiProcess
let second: ApiProcess
let fixture: NotificationFixture
/** Every API key issued during the test, for the dump, Redis and log scans. */
const issuedKeys: string[] = []
let checks = 0
let fiveXX = 0
let started = 0

const report = createFaultReport({
  fault: '7-security',
  title: '7. Security',
  checked:
    'two API processes on one database (trace-level logs): pg_dump of the whole database and every Redis value never hold a plaintext key (their SHA-256 is there); ' +
    'a key revoked on one instance is refused by the other on the very next request; keys never act on another project’s app (403), a deleted project’s key 404; ' +
    'every admin and platform route of the OpenAPI document refuses missing, wrong, other-group and malformed tokens (401) and writes nothing; spoofed ' +
    'X-Forwarded-For does not escape the Redis-held limit without TRUST_PROXY, does with it set to the proxy, not with another proxy configured; ' +
    'no key, token or cursor secret in any process log',
  testFile: 'test/faults/security.test.ts',
})

function baseEnv(prefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: database.url,
    REDIS_URL: services.redis.url,
    QUEUE_PREFIX: prefix,
    // everything a request can make the server log
    LOG_LEVEL: 'trace',
    DEVNET: 'false',
    ADMIN_TOKEN: secrets.adminToken,
    PLATFORM_TOKEN: secrets.platformToken,
    CURSOR_SECRET: secrets.cursorSecret,
    RATE_LIMIT_MAX: '100000000',
    ...extra,
  }
}

async function startApi(name: string, env: Record<string, string>): Promise<ApiProcess> {
  const api = await startApiProcess('api', env, `security-${name}`)
  apis.push(api)
  return api
}

/** A request whose answer is counted: every check below goes through here. */
async function call(api: ApiProcess, path: string, init: Parameters<typeof request>[1] = {}) {
  const response = await request(`${api.url}${path}`, init)
  checks++
  if (response.status >= 500) fiveXX++
  return response
}

const usersOf = (api: ApiProcess, key: string | undefined, appUrl: string, extraHeaders: Record<string, string> = {}) =>
  call(api, `/v1/notifications/app/users?app_url=${encodeURIComponent(appUrl)}`, { headers: { ...(key ? { 'x-api-key': key } : {}), ...extraHeaders } })

beforeAll(async () => {
  started = Date.now()
  services = await startPrivateServices()
  database = await createTrialDatabase(services.postgres, 'security')
  first = await startApi('first', baseEnv('security'))
  second = await startApi('second', baseEnv('security'))
  fixture = await seedNotifications(first.url, secrets)
  issuedKeys.push(...Object.values(fixture.keys).map((key) => key.apiKey))
  await installWriteAudit(database.db)
}, 300_000)

afterAll(async () => {
  await Promise.all(apis.map((api) => api.role.kill('SIGTERM')))
  await database?.drop()
  await services?.stop()
})

describe('7. Security', () => {
  it('a revoked key is refused at once, by the instance that revoked it and by another one', async () => {
    const admin = adminCalls(first.url, secrets.adminToken)
    const statuses: string[] = []
    for (let trial = 0; trial < 20; trial++) {
      const key = await admin.createKey(fixture.projects.A)
      issuedKeys.push(key.apiKey)
      // both instances have used the key (anything they might cache is warm)
      const before = [(await usersOf(first, key.apiKey, fixture.apps.A)).status, (await usersOf(second, key.apiKey, fixture.apps.A)).status]
      await admin.revokeKey(key.keyId)
      const after = [(await usersOf(second, key.apiKey, fixture.apps.A)).status, (await usersOf(first, key.apiKey, fixture.apps.A)).status]
      statuses.push(`${before.join(',')} -> ${after.join(',')}`)
    }
    expect(new Set(statuses)).toEqual(new Set(['200,200 -> 401,401']))
  })

  it("a key never reaches another project's app, nor acts for a deleted or unlisted project", async () => {
    const { keys, apps, wallets } = fixture
    const wallet = wallets.enabled[0]!
    const before = await writesSoFar(database.db)
    const answers: Record<string, number> = {}
    const cases: Array<[string, string, string, number]> = [
      ['A key on B app', keys.A.apiKey, apps.B, 403],
      ['A key on C app', keys.A.apiKey, apps.C, 403],
      ['A key on E app', keys.A.apiKey, apps.E, 403],
      ['B key on A app', keys.B.apiKey, apps.A, 403],
      ['C key (not whitelisted) on its own app', keys.C.apiKey, apps.C, 403],
      ['D key (deleted project) on A app', keys.D.apiKey, apps.A, 404],
      ['revoked A key on A app', keys.revokedA.apiKey, apps.A, 401],
    ]
    const expected: Record<string, number> = {}
    for (const api of [first, second]) {
      for (const [name, key, appUrl, status] of cases) {
        const send = await call(api, '/v1/notifications/send', {
          method: 'POST',
          headers: { 'x-api-key': key },
          body: { app_url: appUrl, wallet_addresses: [wallet], title: 'Cross', message: 'project' },
        })
        const statusCall = await call(api, '/v1/notifications/app/user/status', { method: 'POST', headers: { 'x-api-key': key }, body: { app_url: appUrl, wallet_address: wallet } })
        const users = await usersOf(api, key, appUrl)
        for (const [endpoint, response] of [['send', send], ['status', statusCall], ['users', users]] as const) {
          answers[`${name} ${endpoint}`] = response.status
          expected[`${name} ${endpoint}`] = status
        }
      }
    }
    expect(answers).toEqual(expected)
    expect(await writesSoFar(database.db)).toBe(before)
    // and the owner's key does work there, so the refusals above are about the key
    expect((await usersOf(first, keys.B.apiKey, apps.B)).status).toBe(200)
  })

  it('every admin and platform route refuses a missing, wrong or misused token with 401 and writes nothing', async () => {
    const operations = operationsOf((await call(first, '/openapi.json')).body).filter((operation) => /^\/v1\/(admin|platform)\//.test(operation.path))
    expect(operations.length).toBeGreaterThanOrEqual(8)
    const before = await writesSoFar(database.db)
    const refusals: Record<string, number> = {}
    for (const operation of operations) {
      const own = operation.path.startsWith('/v1/admin') ? secrets.adminToken : secrets.platformToken
      const other = own === secrets.adminToken ? secrets.platformToken : secrets.adminToken
      const attempts: Record<string, Record<string, string>> = {
        missing: {},
        'other group token': { authorization: `Bearer ${other}` },
        'token plus a character': { authorization: `Bearer ${own}x` },
        'token less a character': { authorization: `Bearer ${own.slice(0, -1)}` },
        'token as Basic': { authorization: `Basic ${Buffer.from(`admin:${own}`).toString('base64')}` },
        'token without scheme': { authorization: own },
        'empty bearer': { authorization: 'Bearer ' },
        'an API key instead': { 'x-api-key': fixture.keys.A.apiKey },
        'token in the query string only': {},
      }
      const path = operation.path.replace(/\{\w+\}/g, fixture.projects.E)
      for (const [name, headers] of Object.entries(attempts)) {
        const query = name === 'token in the query string only' ? `?token=${own}&access_token=${own}` : operation.method === 'GET' ? `?wallet_address=${randomWallet()}` : ''
        const body = operation.body ? { name: 'x', whitelisted: true, app_url: 'https://sneaky.example', wallet_address: randomWallet(), pinned: true } : undefined
        for (const api of [first, second]) {
          const response = await call(api, `${path}${query}`, { method: operation.method, headers, body })
          refusals[`${operation.method} ${operation.path} ${name}`] = response.status
        }
      }
    }
    expect(Object.entries(refusals).filter(([, status]) => status !== 401)).toEqual([])
    expect(await writesSoFar(database.db)).toBe(before)
  })

  it('a spoofed X-Forwarded-For cannot escape the rate limit unless a trusted proxy is configured', async () => {
    const limited = (name: string, extra: Record<string, string>) => startApi(name, baseEnv(`rate_${name}`, { RATE_LIMIT_MAX: '20', RATE_LIMIT_WINDOW_MS: '600000', ...extra }))
    const [direct, otherProxy, trusted] = await Promise.all([
      limited('direct', {}),
      limited('other_proxy', { TRUST_PROXY: '10.0.0.1' }),
      limited('trusted', { TRUST_PROXY: '127.0.0.1' }),
    ])
    const spoofed = async (api: ApiProcess, index: number) => {
      const headers = {
        'x-forwarded-for': `203.0.113.${index % 250}, 198.51.100.${index % 250}`,
        'x-real-ip': `192.0.2.${index % 250}`,
        forwarded: `for=192.0.2.${index % 250}`,
      }
      return (await usersOf(api, fixture.keys.A.apiKey, fixture.apps.A, headers)).status
    }
    const run = async (api: ApiProcess) => {
      const statuses: number[] = []
      for (let index = 0; index < 30; index++) statuses.push(await spoofed(api, index))
      return statuses
    }
    const firstTwenty = (statuses: number[]) => statuses.slice(0, 20).every((status) => status === 200)
    const restLimited = (statuses: number[]) => statuses.slice(20).every((status) => status === 429)
    const directStatuses = await run(direct)
    const otherProxyStatuses = await run(otherProxy)
    const trustedStatuses = await run(trusted)
    expect({ first: firstTwenty(directStatuses), rest: restLimited(directStatuses) }).toEqual({ first: true, rest: true })
    expect({ first: firstTwenty(otherProxyStatuses), rest: restLimited(otherProxyStatuses) }).toEqual({ first: true, rest: true })
    // behind the configured proxy every forwarded client has its own counter…
    expect(trustedStatuses.every((status) => status === 200)).toBe(true)
    // …and one forwarded client is still held to the limit
    const sameClient: number[] = []
    for (let index = 0; index < 25; index++) sameClient.push((await usersOf(trusted, fixture.keys.A.apiKey, fixture.apps.A, { 'x-forwarded-for': '203.0.113.77' })).status)
    expect({ first: firstTwenty(sameClient), rest: sameClient.slice(20).every((status) => status === 429) }).toEqual({ first: true, rest: true })
    // spreading requests over two instances on the same Redis gains nothing either
    const twin = await limited('direct', {})
    const shared: number[] = []
    for (let index = 0; index < 4; index++) shared.push(await spoofed(index % 2 === 0 ? direct : twin, 100 + index))
    expect(shared.every((status) => status === 429)).toBe(true)
  })

  it('the database and Redis never hold a plaintext API key, only its hash', async () => {
    const dumpCommand = join(dirname(execFileSync('bash', ['-c', 'ls /usr/lib/postgresql/*/bin/pg_dump | sort -V | tail -n1'], { encoding: 'utf8' }).trim()), 'pg_dump')
    const dump = execFileSync(dumpCommand, ['--dbname', database.url, '--no-owner'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
    const redis = new Redis(services.redis.url)
    const redisValues: string[] = []
    try {
      let cursor = '0'
      do {
        const [next, keys] = await redis.scan(cursor, 'COUNT', 1000)
        cursor = next
        for (const key of keys) {
          const type = await redis.type(key)
          const value =
            type === 'string' ? await redis.get(key) : type === 'hash' ? JSON.stringify(await redis.hgetall(key)) : type === 'list' ? JSON.stringify(await redis.lrange(key, 0, -1)) : type === 'zset' ? JSON.stringify(await redis.zrange(key, 0, -1)) : type === 'set' ? JSON.stringify(await redis.smembers(key)) : ''
          redisValues.push(key, value ?? '')
        }
      } while (cursor !== '0')
    } finally {
      redis.disconnect()
    }
    const keyBodies = issuedKeys.map((key) => key.replace(/^ank_/, ''))
    expect(issuedKeys.length).toBeGreaterThan(20)
    expect(leakedSecrets([dump], [...issuedKeys, ...keyBodies])).toEqual([])
    expect(leakedSecrets(redisValues, [...issuedKeys, ...keyBodies])).toEqual([])
    // the scan looked at the right place: every key's SHA-256 is in the dump
    const hashes = issuedKeys.map((key) => createHash('sha256').update(key).digest('hex'))
    expect(hashes.filter((hash) => !dump.includes(hash))).toEqual([])
  })

  it('no process log holds an API key, a token or the cursor secret', async () => {
    // clients that put credentials where they do not belong: in the query string
    for (const api of [first, second]) {
      const key = fixture.keys.A.apiKey
      await call(api, `/v1/notifications/app/users?app_url=${encodeURIComponent(fixture.apps.A)}&api_key=${key}&x-api-key=${key}&apiKey=${key}`)
      await call(api, `/v1/platform/inbox?wallet_address=${randomWallet()}&access_token=${secrets.platformToken}`, { headers: { authorization: `Bearer ${secrets.platformToken}` } })
    }
    const logs = apis.map((api) => api.role.log())
    expect(logs.join('').length).toBeGreaterThan(100_000)
    const leaks = leakedSecrets(logs, [...issuedKeys, secrets.adminToken, secrets.platformToken, secrets.cursorSecret])
    report.record({ trial: 1, lost: 0, doubled: 0, fiveXX, inputs: checks, ok: leaks.length === 0 && fiveXX === 0, durationMs: Date.now() - started, details: { checks, issuedKeys: issuedKeys.length, logBytes: logs.join('').length, leaks: leaks.length } })
    expect(leaks).toEqual([])
    expect(fiveXX).toBe(0)
  })
})
