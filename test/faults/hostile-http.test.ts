import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { GroundTruth } from '../../devnet/ledger.js'
import { createRandom } from '../../devnet/random.js'
import { SMALL_BODY_LIMIT } from '../../src/http/guard.js'
import { normalizeAppUrl } from '../../src/notifications/app-url.js'
import { request } from '../support/api.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { chainsEnv } from '../support/processes.js'
import {
  createSecrets,
  installWriteAudit,
  randomWallet,
  seedNotifications,
  startApiProcess,
  writesSoFar,
  type ApiProcess,
  type NotificationFixture,
} from './support/api-fixture.js'
import { hasErrorShape, nextRequest, operationsOf, send, type FuzzContext, type FuzzRequest, type Operation } from './support/http-fuzz.js'
import { createFaultReport } from './support/report.js'
import { leakedSecrets } from './support/roles.js'
import { faultSeed, knobs } from './support/scale.js'
import { createTrialDatabase, startPrivateServices, type PrivateServices, type TrialDatabase } from './support/services.js'

/**
 * 5. Hostile HTTP input: generated requests across every route of the
 * OpenAPI document (and the hidden ones) against `attribution api` as a
 * child process: 0 answers with 5xx, no hang, the server stays alive, a
 * request that is refused writes nothing, and credentials never open more
 * than they should.
 */

const BODY_LIMIT = 1_048_576
const REQUEST_DEADLINE_MS = 15_000
/** How long the hostile load lasts at least while the probe measures /healthz. */
const MIN_LOAD_MS = 5_000

let services: PrivateServices
let chain: TestChain
let truth: GroundTruth
let database: TrialDatabase
let api: ApiProcess
let fixture: NotificationFixture
let operations: Operation[]
const secrets = createSecrets()
const queuePrefix = 'hostile'

const report = createFaultReport({
  fault: '5-hostile-http',
  title: '5. Hostile HTTP input',
  checked:
    'requests generated from /openapi.json (every route, plus /dashboard, assets, /docs, /metrics and unknown paths): bodies built from each schema then broken ' +
    '(wrong types, missing/extra/prototype keys, huge arrays, nesting 5,000 deep, 100,000-deep raw arrays, bad UTF-8, BOM, malformed JSON, odd content types), ' +
    'bodies over the 1 MiB limit, injection strings and bad percent-encoding in paths and query strings, right/wrong/revoked/other-project keys and tokens; ' +
    'checked: no 5xx, no hang (15 s), rows written by refused requests (audit trigger on every table) = 0, no delivery job from a refused request, ' +
    '2xx only with the right token or the key of the app’s own project, every body route answers 413 over the limit, server alive, no secret in its log',
  testFile: 'test/faults/hostile-http.test.ts',
})

const heavyReport = createFaultReport({
  fault: '5b-hostile-load',
  title: '5b. Hostile load: what other clients see',
  checked:
    'issue 11 payloads (60,000 🎉, 40,000 👨‍👩‍👧, a 250,000-character target_path, 30 letters × 15,000 combining marks), texts, address lists and nesting up to BODY_LIMIT on send, ' +
    'bodies up to BODY_LIMIT on every other body route and the longest query strings on every GET route, 3 rounds, while another process asks /healthz every 10 ms; ' +
    'checked: /healthz p99 < 50 ms and no error, no request over 100 ms of CPU more than once after the first round (http_request_cpu_seconds from /metrics), the payloads answered 400',
  testFile: 'test/faults/hostile-http.test.ts',
  testName: 'hostile load',
})

beforeAll(async () => {
  ;[services, chain] = await Promise.all([startPrivateServices(), startTestChain({ seed: faultSeed })])
  truth = await sendMixedTraffic(chain, { transactions: 60, blocks: 6 })
  database = await createTrialDatabase(services.postgres, 'hostile_http')
  api = await startApiProcess(
    'api',
    {
      DATABASE_URL: database.url,
      REDIS_URL: services.redis.url,
      QUEUE_PREFIX: queuePrefix,
      LOG_LEVEL: 'info',
      DEVNET: 'false',
      ADMIN_TOKEN: secrets.adminToken,
      PLATFORM_TOKEN: secrets.platformToken,
      CURSOR_SECRET: secrets.cursorSecret,
      // the limit has its own tests; here it would turn most requests into 429s
      RATE_LIMIT_MAX: '100000000',
      REGISTER_RATE_LIMIT_MAX: '100000000',
      VALIDATE_RATE_LIMIT_MAX: '100000000',
      VALIDATE_RPC_MAX: '100000000',
      BODY_LIMIT: String(BODY_LIMIT),
      CHAINS: chainsEnv([chain.config]),
    },
    'hostile-http-api',
  )
  fixture = await seedNotifications(api.url, secrets)
  await installWriteAudit(database.db)
  operations = operationsOf((await request(`${api.url}/openapi.json`)).body)
}, 300_000)

afterAll(async () => {
  await api?.role.kill('SIGTERM')
  await database?.drop()
  await chain?.stop()
  await services?.stop()
})

function fuzzContext(): FuzzContext {
  const { keys, apps, wallets, projects } = fixture
  return {
    adminToken: secrets.adminToken,
    platformToken: secrets.platformToken,
    apiKeys: [keys.A.apiKey, keys.B.apiKey, keys.C.apiKey, keys.D.apiKey, keys.E.apiKey, keys.revokedA.apiKey],
    ids: [projects.E, keys.E.keyId, projects.D, crypto.randomUUID(), '00000000-0000-0000-0000-000000000000'],
    appUrls: [apps.A, apps.B, apps.C, apps.E, `${apps.A}/`, apps.A.toUpperCase(), 'https://unknown.example'],
    wallets: [...wallets.enabled, ...wallets.disabled, ...wallets.strangers, randomWallet().toLowerCase()],
    codes: [...new Set(truth.attributions.map((row) => row.code))].slice(0, 10),
    hashes: [...new Set(truth.attributions.flatMap((row) => [row.txHash, ...(row.userOpHash ? [row.userOpHash] : [])]))].slice(0, 10),
    bodyLimit: BODY_LIMIT,
  }
}

/** Whether a 2xx was allowed for the credentials it carried: the oracle for "a key never reaches another project's app". */
function credentialProblem(fuzz: FuzzRequest, status: number): string | undefined {
  if (status < 200 || status >= 300) return undefined
  const path = fuzz.path.split('?')[0]!
  const auth = fuzz.headers.authorization ?? ''
  const bearerIs = (token: string) => new RegExp(`^Bearer\\s+${token}\\s*$`, 'i').test(auth)
  if (path.startsWith('/v1/admin') && !bearerIs(secrets.adminToken)) return 'admin route answered 2xx without the admin token'
  if (path.startsWith('/v1/platform') && !bearerIs(secrets.platformToken)) return 'platform route answered 2xx without the platform token'
  if (path.startsWith('/v1/notifications')) {
    const key = fuzz.headers['x-api-key']
    const owners: Record<string, string | undefined> = { [fixture.apps.A]: fixture.keys.A.apiKey, [fixture.apps.B]: fixture.keys.B.apiKey, [fixture.apps.E]: fixture.keys.E.apiKey }
    let appUrl: unknown
    // a GET names its app in the query and its body, if any, is never read (seed 651310697 sent one with a
    // broken JSON body and counted the route's rightful 200 as a problem); the other routes name it in the body
    const appInBody = fuzz.method !== 'GET' && fuzz.method !== 'HEAD'
    try {
      appUrl =
        appInBody && fuzz.body
          ? (JSON.parse(fuzz.body.toString('utf8')) as { app_url?: unknown }).app_url
          : new URL(fuzz.path, 'http://x').searchParams.get('app_url')
    } catch {
      return 'notification route answered 2xx to a body that is not JSON'
    }
    let normalized: string | undefined
    try {
      normalized = typeof appUrl === 'string' ? normalizeAppUrl(appUrl) : undefined
    } catch {
      normalized = undefined
    }
    if (!normalized || owners[normalized] !== key) return `notification route answered 2xx for app ${String(appUrl)} with a key that is not its project's`
  }
  return undefined
}

async function deliveryJobsSoFar(): Promise<number> {
  const { Redis } = await import('ioredis')
  const redis = new Redis(services.redis.url, { maxRetriesPerRequest: 1 })
  try {
    return Number((await redis.get(`${queuePrefix}:notification-delivery:id`)) ?? 0)
  } finally {
    redis.disconnect()
  }
}

it('every route with a JSON body answers 413 to a body over the limit, and writes nothing', async () => {
  const before = await writesSoFar(database.db)
  const answers: Record<string, number | string> = {}
  for (const operation of operations.filter((candidate) => candidate.body)) {
    const path = operation.path.replace(/\{(\w+)\}/g, () => fixture.projects.E)
    const token = operation.tags.includes('platform') ? secrets.platformToken : secrets.adminToken
    const body = Buffer.alloc(BODY_LIMIT + 1, 0x20)
    body.write('{"app_url":"', 0)
    const response = await send(
      api.url,
      { method: operation.method, path, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-api-key': fixture.keys.A.apiKey }, body },
      REQUEST_DEADLINE_MS,
    )
    // a request that got no answer says why (reset, hang-up, deadline): a failure names the route and what it saw
    answers[`${operation.method} ${operation.path}`] = 'status' in response ? response.status : response.error
  }
  expect(Object.keys(answers).length).toBeGreaterThanOrEqual(8)
  expect(answers).toEqual(Object.fromEntries(Object.keys(answers).map((route) => [route, 413])))
  expect(await writesSoFar(database.db)).toBe(before)
})

it('requests that once broke the server answer 4xx in the one error shape and write nothing', async () => {
  const before = await writesSoFar(database.db)
  const admin = { authorization: `Bearer ${secrets.adminToken}`, 'content-type': 'application/json' }
  const cases: Array<{ name: string; method: string; path: string; headers?: Record<string, string>; body?: string }> = [
    { name: 'NUL in a builder-code path parameter', method: 'GET', path: '/v1/agents/builder-codes/%00' },
    { name: 'NUL in an admin project name', method: 'POST', path: '/v1/admin/projects', headers: admin, body: '{"name":"a\\u0000b"}' },
    { name: 'NUL in a notification title', method: 'POST', path: '/v1/notifications/send', headers: { 'x-api-key': fixture.keys.A.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ app_url: fixture.apps.A, wallet_addresses: [fixture.wallets.enabled[0]], title: 'a\u0000', message: 'm\u0000' }) },
    { name: 'prototype member as a dashboard asset', method: 'GET', path: '/dashboard/assets/constructor' },
    { name: '__proto__ as a dashboard asset', method: 'GET', path: '/dashboard/assets/__proto__' },
    { name: 'bad percent-encoding in the path', method: 'GET', path: '/v1/analytics/codes/%E0%A4%A' },
    { name: 'path parameter over the router limit', method: 'GET', path: `/dashboard/assets/${'x'.repeat(2_000)}` },
    { name: 'chainId beyond a Postgres integer', method: 'GET', path: '/v1/analytics/leaderboard?chainId=4294967296' },
    { name: 'headers over the size limit', method: 'GET', path: '/v1/analytics/leaderboard', headers: { 'x-api-key': 'x'.repeat(20_000) } },
  ]
  const answers: Record<string, string> = {}
  for (const { name, method, path, headers = {}, body } of cases) {
    const answer = await send(api.url, { method, path, headers, body: body === undefined ? undefined : Buffer.from(body) }, REQUEST_DEADLINE_MS)
    answers[name] = 'status' in answer ? `${answer.status >= 400 && answer.status < 500 ? '4xx' : answer.status} ${hasErrorShape(answer.body) ? 'shared shape' : answer.body}` : answer.error
  }
  expect(answers).toEqual(Object.fromEntries(cases.map(({ name }) => [name, '4xx shared shape'])))
  expect(await writesSoFar(database.db)).toBe(before)
})

it(`${knobs.httpRequests.toLocaleString('en')} generated hostile requests: 0 × 5xx, no hang, refused requests write nothing`, async () => {
  const started = Date.now()
  const random = createRandom(faultSeed + 5)
  const context = fuzzContext()
  const statuses: Record<string, number> = {}
  const byRoute = new Map<string, number>()
  const problems: Array<{ problem: string; request: string; answer: string; replay: string }> = []
  const problemKinds = new Map<string, number>()
  const note = (problem: string, fuzz: FuzzRequest, answer: string) => {
    // a few examples of each kind of problem
    const kind = problem.replace(/\d+ rows/, 'n rows')
    problemKinds.set(kind, (problemKinds.get(kind) ?? 0) + 1)
    if (problemKinds.get(kind)! > 5) return
    problems.push({
      problem,
      request: `${fuzz.method} ${fuzz.path.slice(0, 300)} [${fuzz.shape}] ${JSON.stringify(fuzz.headers).slice(0, 300)} ${fuzz.body?.subarray(0, 300).toString('utf8') ?? ''}`,
      answer: answer.slice(0, 500),
      // the whole request, to send it again by hand
      replay: JSON.stringify({ method: fuzz.method, path: fuzz.path, headers: fuzz.headers, body: fuzz.body?.toString('base64') }),
    })
  }
  let fiveXX = 0
  let otherErrorShapes = 0
  let hangs = 0
  let refusedWrites = 0
  let refusedJobs = 0
  let writes = await writesSoFar(database.db)
  let jobs = await deliveryJobsSoFar()
  for (let i = 0; i < knobs.httpRequests; i++) {
    const fuzz = nextRequest(random, context, operations)
    byRoute.set(`${fuzz.operation.method} ${fuzz.operation.path}`, (byRoute.get(`${fuzz.operation.method} ${fuzz.operation.path}`) ?? 0) + 1)
    const answer = await send(api.url, fuzz, REQUEST_DEADLINE_MS)
    if (!('status' in answer)) {
      // an oversized body may be cut off by the server's early 413: the connection closing is an answer, not a hang
      if (fuzz.oversized && !/no answer within/.test(answer.error)) continue
      hangs++
      note('no answer', fuzz, answer.error)
      continue
    }
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1
    if (answer.status >= 500) {
      fiveXX++
      note(`${answer.status}`, fuzz, answer.body.slice(0, 500))
    }
    // HEAD answers carry no body; everything else refused speaks the one error shape
    if (answer.status >= 400 && fuzz.method !== 'HEAD' && !hasErrorShape(answer.body)) {
      otherErrorShapes++
      note(`${answer.status} in another error shape`, fuzz, answer.body)
    }
    const credential = credentialProblem(fuzz, answer.status)
    if (credential) note(credential, fuzz, answer.body)
    const writesNow = await writesSoFar(database.db)
    const jobsNow = fuzz.operation.path === '/v1/notifications/send' ? await deliveryJobsSoFar() : jobs
    if (answer.status >= 400) {
      if (writesNow !== writes) {
        refusedWrites += writesNow - writes
        note(`refused with ${answer.status} but wrote ${writesNow - writes} rows`, fuzz, answer.body)
      }
      if (jobsNow !== jobs) {
        refusedJobs += jobsNow - jobs
        note(`refused with ${answer.status} but enqueued a delivery`, fuzz, answer.body)
      }
    }
    writes = writesNow
    jobs = jobsNow
  }
  const alive = api.role.child.exitCode === null && (await request(`${api.url}/healthz`)).status === 200
  const ready = (await request(`${api.url}/readyz`)).status
  const leaks = leakedSecrets([api.role.log()], [secrets.adminToken, secrets.platformToken, ...context.apiKeys])
  const credentialProblems = problems.filter((problem) => /2xx/.test(problem.problem)).length
  report.record({
    trial: 1,
    lost: 0,
    doubled: 0,
    fiveXX,
    inputs: knobs.httpRequests,
    ok: fiveXX === 0 && hangs === 0 && otherErrorShapes === 0 && refusedWrites === 0 && refusedJobs === 0 && credentialProblems === 0 && alive && leaks.length === 0,
    durationMs: Date.now() - started,
    details: {
      requests: knobs.httpRequests,
      routes: byRoute.size,
      statuses,
      hangs,
      otherErrorShapes,
      refusedWrites,
      refusedJobs,
      credentialProblems,
      alive,
      ready,
      leakedSecrets: leaks.length,
      problemKinds: Object.fromEntries(problemKinds),
      problems: problems.slice(0, 20),
    },
  })
  expect(problems).toEqual([])
  expect({ fiveXX, hangs, refusedWrites, refusedJobs, alive, ready, leaks }).toEqual({ fiveXX: 0, hangs: 0, refusedWrites: 0, refusedJobs: 0, alive: true, ready: 200, leaks: [] })
  // every route of the document was hit, and a fair share of requests got through to the handlers
  expect(byRoute.size).toBe(operations.length)
  expect(Object.entries(statuses).filter(([status]) => status.startsWith('2')).reduce((sum, [, n]) => sum + n, 0)).toBeGreaterThan(knobs.httpRequests / 20)
})

/** Per route, how many requests the server measured over `seconds` of CPU (`http_request_cpu_seconds`, from /metrics). */
function requestsOverCpu(metrics: string, seconds: string): { overBudget: Record<string, number>; requests: number } {
  const labelsOf = (text: string) => Object.fromEntries([...text.matchAll(/(\w+)="([^"]*)"/g)].map((match) => [match[1]!, match[2]!]))
  const counts = new Map<string, number>()
  const withinBudget = new Map<string, number>()
  for (const line of metrics.split('\n')) {
    const match = /^http_request_cpu_seconds_(count|bucket)\{([^}]*)\} (\d+)/.exec(line)
    if (!match) continue
    const labels = labelsOf(match[2]!)
    const route = `${labels.method} ${labels.route}`
    if (match[1] === 'count') counts.set(route, Number(match[3]))
    else if (labels.le === seconds) withinBudget.set(route, Number(match[3]))
  }
  const overBudget: Record<string, number> = {}
  for (const [route, count] of counts) if (count !== withinBudget.get(route)) overBudget[route] = count - (withinBudget.get(route) ?? 0)
  return { overBudget, requests: [...counts.values()].reduce((sum, n) => sum + n, 0) }
}

/** Per route, the counts of `all` less those of `before` (routes left with none are dropped). */
function subtractCounts(all: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(all).map(([route, n]) => [route, n - (before[route] ?? 0)]).filter(([, n]) => (n as number) > 0))
}

/**
 * A small-object route refuses a body past SMALL_BODY_LIMIT with an early 413
 * and closes the connection; a client still writing the rest may see the
 * reset before the answer. That is a refusal, not a hang.
 */
function refusedByClosing(heavy: { path: string; body?: Buffer }, error: string): boolean {
  const smallObjectRoute = heavy.path !== '/v1/notifications/send'
  return smallObjectRoute && (heavy.body?.length ?? 0) > SMALL_BODY_LIMIT && !/no answer within/.test(error)
}

/** The heaviest requests a client holding a live key (and the tokens) can send: issue 11's payloads and bodies up to BODY_LIMIT on every route. */
function heavyRequests(): Array<{ name: string; method: string; path: string; headers: Record<string, string>; body?: Buffer }> {
  const json = { 'content-type': 'application/json' }
  const key: Record<string, string> = { ...json, 'x-api-key': fixture.keys.A.apiKey }
  const send = (fields: Record<string, unknown>) => ({
    method: 'POST',
    path: '/v1/notifications/send',
    headers: key,
    body: Buffer.from(JSON.stringify({ app_url: fixture.apps.A, wallet_addresses: [fixture.wallets.enabled[0]], title: 'Hi', message: 'Hello', ...fields })),
  })
  const nearLimit = (length: number, unit: string) => unit.repeat(Math.floor(length / Buffer.byteLength(unit)))
  const requests: Array<{ name: string; method: string; path: string; headers: Record<string, string>; body?: Buffer }> = [
    { name: 'title of 60,000 🎉', ...send({ title: '🎉'.repeat(60_000) }) },
    { name: 'message of 40,000 👨‍👩‍👧', ...send({ message: '👨‍👩‍👧'.repeat(40_000) }) },
    { name: 'target_path of 250,000 characters', ...send({ target_path: `/${'é'.repeat(249_999)}` }) },
    { name: '30 letters × 15,000 combining marks', ...send({ title: `a${'\u0301'.repeat(15_000)}`.repeat(30) }) },
    { name: 'message of regional indicators near BODY_LIMIT', ...send({ message: nearLimit(BODY_LIMIT - 2_000, '🇫') }) },
    { name: 'title of ASCII near BODY_LIMIT', ...send({ title: nearLimit(BODY_LIMIT - 2_000, 'x') }) },
    { name: 'target_path of ZWJ near BODY_LIMIT', ...send({ target_path: `/${nearLimit(BODY_LIMIT - 2_000, '\u200d')}` }) },
    { name: '23,000 addresses (1 MiB)', ...send({ wallet_addresses: Array.from({ length: 23_000 }, (_, i) => `0x${i.toString(16).padStart(40, '0')}`) }) },
    { name: '1,000 distinct valid addresses', ...send({ wallet_addresses: Array.from({ length: 1_000 }, () => randomWallet().toLowerCase()), title: `load ${Date.now()}` }) },
    { name: 'arrays nested to BODY_LIMIT', method: 'POST', path: '/v1/notifications/send', headers: key, body: Buffer.from(`${'['.repeat(BODY_LIMIT / 2 - 10)}${']'.repeat(BODY_LIMIT / 2 - 10)}`) },
  ]
  // every route with a body, a string field filling the body to just under BODY_LIMIT (small-object routes refuse at 16 KiB)
  for (const operation of operations.filter((candidate) => candidate.body)) {
    const path = operation.path.replace(/\{(\w+)\}/g, () => fixture.projects.E)
    const token = operation.tags.includes('platform') ? secrets.platformToken : secrets.adminToken
    requests.push({
      name: `${operation.method} ${operation.path} near BODY_LIMIT`,
      method: operation.method,
      path,
      headers: { ...json, authorization: `Bearer ${token}`, 'x-api-key': fixture.keys.A.apiKey },
      body: Buffer.from(JSON.stringify({ app_url: fixture.apps.A, name: nearLimit(BODY_LIMIT - 2_000, '👨‍👩‍👧'), walletAddress: 'x'.repeat(1_000) })),
    })
  }
  // every GET route with a query string as long as the server takes
  for (const operation of operations.filter((candidate) => candidate.method === 'GET')) {
    const path = operation.path.replace(/\{(\w+)\}/g, () => encodeURIComponent('é'.repeat(150)))
    requests.push({ name: `GET ${operation.path} long query`, method: 'GET', path: `${path}?${operation.parameters.map((p) => `${p.name}=${'%F0%9F%8E%89'.repeat(600)}`).join('&')}`, headers: { authorization: `Bearer ${secrets.platformToken}`, 'x-api-key': fixture.keys.A.apiKey } })
  }
  return requests
}

type ProbeResult = { requests: number; errors: number; p50Ms: number; p99Ms: number; maxMs: number }

/** /healthz latencies seen by another process (support/healthz-probe.mjs) while `during` runs. */
async function probeHealthz(during: () => Promise<void>): Promise<ProbeResult> {
  const probe = spawn(process.execPath, [fileURLToPath(new URL('./support/healthz-probe.mjs', import.meta.url)), api.url, '10'], { stdio: ['pipe', 'pipe', 'inherit'] })
  let output = ''
  probe.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  try {
    // the probe's first answers, so it measures the whole of `during`
    await sleep(500)
    await during()
  } finally {
    probe.stdin.end()
    await once(probe, 'exit')
  }
  return JSON.parse(output) as ProbeResult
}

it('under hostile load on every route, /healthz p99 stays under 50 ms for another client and no request costs over 100 ms of CPU once warm', async () => {
  const started = Date.now()
  const statuses: Record<string, number[]> = {}
  const slowestAnswerMs: Record<string, number> = {}
  let firstRound: ReturnType<typeof requestsOverCpu> | undefined
  let rounds = 0
  const cpuOverBudget = async () => requestsOverCpu(String((await request(`${api.url}/metrics`)).body), '0.1')
  // the floor in the same run: what the probe sees with no hostile request (the machine's own scheduling delays)
  const idle = await probeHealthz(() => sleep(3_000))
  const healthz = await probeHealthz(async () => {
    const requests = heavyRequests()
    const loadStarted = Date.now()
    // three rounds at least, and long enough that the probe's p99 rests on a few hundred answers even on a busy machine
    for (let round = 0; round < 3 || Date.now() - loadStarted < MIN_LOAD_MS; round++, rounds++) {
      for (const heavy of requests) {
        const answer = await send(api.url, heavy, REQUEST_DEADLINE_MS)
        ;(statuses[heavy.name] ??= []).push('status' in answer ? answer.status : refusedByClosing(heavy, answer.error) ? 413 : -1)
        slowestAnswerMs[heavy.name] = Math.max(slowestAnswerMs[heavy.name] ?? 0, answer.ms)
      }
      if (round === 0) firstRound = await cpuOverBudget()
    }
  })
  const metrics = (await request(`${api.url}/metrics`)).body as unknown as string
  const all = requestsOverCpu(typeof metrics === 'string' ? metrics : JSON.stringify(metrics), '0.1')
  // what a client repeating the requests costs: the first round also pays one-time work (code compiled on its first use,
  // ICU data loaded), recorded but not the budget's subject
  const cpu = { ...all, overBudget: subtractCounts(all.overBudget, firstRound?.overBudget ?? {}) }
  // every round repeats the same requests (3 at least, ~20 in 5 s): one that costs too much is over the budget round
  // after round. A route over it once paid for other work the event loop did meanwhile (the /healthz probe's answers):
  // the measure is an upper bound when work overlaps (a CI run saw one send at 102 ms in a later round, the rest under)
  const overMoreThanOnce = Object.fromEntries(Object.entries(cpu.overBudget).filter(([, count]) => count > 1))
  const maxCpuMs = Math.max(...[...String(metrics).matchAll(/^http_request_cpu_max_seconds\{[^}]*\} (\S+)/gm)].map((match) => Number(match[1]) * 1_000))
  const eventLoopLagP99 = Number(/^nodejs_eventloop_lag_p99_seconds (\S+)/m.exec(String(metrics))?.[1])
  const refusedWithout400 = Object.entries(statuses).filter(([name, list]) => /🎉|👨|target_path of 250|combining/.test(name) && list.some((status) => status !== 400))
  const loadAverage = (await import('node:os')).loadavg()[0]
  const details = { healthz, healthzIdle: idle, loadAverage, maxCpuMs, requestsOverBudget: cpu.overBudget, overMoreThanOnce, rounds, firstRoundOverBudget: firstRound?.overBudget ?? {}, requestsMeasured: cpu.requests, eventLoopLagP99Ms: eventLoopLagP99 * 1_000, statuses, slowestAnswerMs }
  heavyReport.record({
    trial: 1,
    lost: 0,
    doubled: 0,
    fiveXX: Object.values(statuses).flat().filter((status) => status >= 500).length,
    inputs: Object.values(statuses).flat().length,
    ok: healthz.p99Ms < 50 && healthz.errors === 0 && Object.keys(overMoreThanOnce).length === 0 && refusedWithout400.length === 0,
    durationMs: Date.now() - started,
    details,
  })
  expect(refusedWithout400).toEqual([])
  expect(Object.values(statuses).flat().filter((status) => status >= 500 || status < 0)).toEqual([])
  expect(overMoreThanOnce).toEqual({})
  expect(healthz.errors).toBe(0)
  expect(healthz.requests).toBeGreaterThan(100)
  expect(healthz.p99Ms).toBeLessThan(50)
})
