import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon, { type Request } from 'autocannon'
import type { ExpectedAttribution } from '../devnet/ledger.js'
import type { Bench } from './lib/bench.js'
import { serveChain } from './lib/chain-setup.js'
import {
  createBenchDatabase,
  createProgressReader,
  deleteRedisPrefix,
  requireIndexer,
  startIndexerProcess,
  uniqueName,
  type IndexerProcess,
} from './lib/indexer.js'
import { registerWallets } from './lib/pipeline-run.js'
import { createRandom } from '../devnet/random.js'
import { fmt, printTable, ratio, type Target } from './lib/report.js'
import { median } from './lib/stats.js'

type Scenario = {
  name: string
  connections: number
  request: Request
  /** Why the scenario cannot run in this checkout, when it cannot. */
  skipped?: string
}

type Measured = { rps: number; p50: number; p99: number; non2xx: number; errors: number }

type ScenarioResult = {
  name: string
  connections: number
  scenario: Measured
  floor: Measured
  ratio: number
  rounds: Array<{ scenario: Measured; floor: Measured; ratio: number }>
  /** Monotonic-clock window (µs) of the last measured run, to cut the service's CPU profile per scenario (bench/profile-top.ts). */
  profileWindow: string
}

const json = { 'content-type': 'application/json' }

async function call(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...(body !== undefined && json), ...headers },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  })
  const text = await response.text()
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, any>) : {} }
}

async function expectStatus(label: string, promise: ReturnType<typeof call>, ...ok: number[]) {
  const response = await promise
  if (!ok.includes(response.status)) throw new Error(`${label}: HTTP ${response.status} ${JSON.stringify(response.body)}`)
  return response.body
}

async function measure(url: string, request: Request, connections: number, duration: number): Promise<Measured> {
  const result = await autocannon({ url, connections, duration, requests: [request], timeout: 30 })
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx, errors: result.errors + result.timeouts }
}

/** Walks the service's own OpenAPI document: a route the document lacks is not built yet. */
async function routesOf(url: string): Promise<Set<string>> {
  const document = await expectStatus('GET /openapi.json', call(url, 'GET', '/openapi.json'), 200)
  return new Set(Object.keys((document as { paths?: Record<string, unknown> }).paths ?? {}))
}

async function inPool<T>(items: readonly T[], concurrency: number, task: (item: T) => Promise<unknown>) {
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await task(items[next++]!)
  }))
}

/** The same wallet every time: after the first request, an answer from the registry's memory of known codes. */
function repeatedRegistrationScenario(): Scenario {
  const wallet = `0x${randomBytes(20).toString('hex')}`
  return {
    name: 'registration of a known wallet, repeated (POST /v1/agents/builder-codes)',
    connections: 10,
    request: { method: 'POST', path: '/v1/agents/builder-codes', headers: json, body: JSON.stringify({ walletAddress: wallet }) },
  }
}

/** A new wallet on every request: a code drawn and a row inserted each time, the work a registration really costs. */
function newRegistrationScenario(): Scenario {
  return {
    name: 'registration of new wallets (POST /v1/agents/builder-codes)',
    connections: 10,
    request: {
      method: 'POST',
      path: '/v1/agents/builder-codes',
      headers: json,
      body: '{}',
      setupRequest: (request) => ({ ...request, body: JSON.stringify({ walletAddress: `0x${randomBytes(20).toString('hex')}` }) }),
    },
  }
}

function validationScenario(routes: Set<string>, attributed: ExpectedAttribution, indexed: boolean): Scenario {
  const scenario: Scenario = {
    name: 'validation of an indexed hash (GET /v1/attribution/validate)',
    connections: 10,
    request: { method: 'GET', path: `/v1/attribution/validate?type=transaction&hash=${attributed.txHash}&chainId=${attributed.chainId}` },
  }
  if (!routes.has('/v1/attribution/validate')) scenario.skipped = 'the validate route is not in /openapi.json yet'
  else if (!indexed) scenario.skipped = 'no indexer to index the hash first'
  return scenario
}

type NotificationSetup = { apiKey: string; appUrl: string; wallets: string[] }

async function setUpNotifications(url: string, tokens: { admin: string; platform: string }): Promise<NotificationSetup> {
  const admin = { authorization: `Bearer ${tokens.admin}` }
  const project = await expectStatus('create project', call(url, 'POST', '/v1/admin/projects', { name: 'bench', whitelisted: true }, admin), 201)
  const appUrl = 'https://bench.example.com'
  await expectStatus('add app', call(url, 'POST', `/v1/admin/projects/${project.projectId}/apps`, { app_url: appUrl }, admin), 200, 201)
  const key = await expectStatus('create key', call(url, 'POST', `/v1/admin/projects/${project.projectId}/api-keys`, undefined, admin), 201)
  const random = createRandom(1000)
  const wallets = Array.from({ length: 1000 }, () => `0x${random.hex(20)}`)
  const platform = { authorization: `Bearer ${tokens.platform}` }
  await inPool(wallets, 16, (wallet) =>
    expectStatus('pin', call(url, 'PUT', '/v1/platform/pins', { app_url: appUrl, wallet_address: wallet, pinned: true, notifications_enabled: true }, platform), 200),
  )
  return { apiKey: key.apiKey as string, appUrl, wallets }
}

function notificationScenarios(routes: Set<string>, setup: NotificationSetup | undefined, missing: string | undefined): Scenario[] {
  const status: Scenario = {
    name: 'notification status (POST /v1/notifications/app/user/status)',
    connections: 10,
    request: { method: 'POST', path: '/v1/notifications/app/user/status', headers: json },
  }
  const send: Scenario = {
    name: 'send to 1,000 addresses (POST /v1/notifications/send)',
    connections: 2,
    request: { method: 'POST', path: '/v1/notifications/send', headers: json },
  }
  const duplicate: Scenario = {
    name: 'repeat a send to 1,000 addresses: every one a 24 h duplicate (POST /v1/notifications/send)',
    connections: 2,
    request: { method: 'POST', path: '/v1/notifications/send', headers: json },
  }
  if (!setup) return [status, send, duplicate].map((scenario) => ({ ...scenario, skipped: missing ?? 'notifications are not set up' }))
  const headers = { ...json, 'x-api-key': setup.apiKey }
  status.request = { ...status.request, headers, body: JSON.stringify({ app_url: setup.appUrl, wallet_address: setup.wallets[7] }) }
  // a new notification every request: an identical one within 24 h would be de-duplicated, a cheaper path than a real send
  const prefix = `{"app_url":${JSON.stringify(setup.appUrl)},"wallet_addresses":${JSON.stringify(setup.wallets)},"message":"Your weekly summary is ready","target_path":"/bench","title":"bench `
  let counter = 0
  send.request = { ...send.request, headers, setupRequest: (request) => ({ ...request, body: `${prefix}${counter++}"}` }) }
  // the same notification every request: after the first, each wallet is recognised as sent within 24 h and nothing is recorded
  duplicate.request = { ...duplicate.request, headers, body: `${prefix}duplicate"}` }
  if (!routes.has('/v1/notifications/send')) send.skipped = duplicate.skipped = 'the send route is not in /openapi.json yet'
  if (!routes.has('/v1/notifications/app/user/status')) status.skipped = 'the status route is not in /openapi.json yet'
  return [status, send, duplicate]
}

async function waitForHealth(service: IndexerProcess, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      if ((await fetch(`${service.url}/healthz`)).ok) return
    } catch {
      // not listening yet
    }
    if (service.exited()) throw new Error(`the service exited during start-up:\n${service.tail()}`)
    if (Date.now() > deadline) throw new Error(`the service did not answer /healthz within ${timeoutMs} ms:\n${service.tail()}`)
    await sleep(100)
  }
}

export const http: Bench = async ({ quick, cpuProfileDir }) => {
  const params = { duration: quick ? 2 : 10, warmupDuration: quick ? 0 : 3, reps: quick ? 1 : 3, chainBlocks: 60 }
  let indexerAvailable = true
  try {
    requireIndexer()
  } catch {
    indexerAvailable = false
  }
  const served = await serveChain({ blocks: params.chainBlocks })
  const truth = served.chain.truth()
  const db = await createBenchDatabase('bench_http')
  const prefix = uniqueName('bench')
  const tokens = { admin: randomBytes(16).toString('hex'), platform: randomBytes(16).toString('hex') }
  let service: IndexerProcess | undefined
  const results: ScenarioResult[] = []
  const skipped: Record<string, string> = {}
  try {
    await registerWallets(db.url, truth)
    service = await startIndexerProcess({
      command: indexerAvailable ? 'start' : 'api',
      rpcUrl: served.replay.url,
      chainId: truth.chainId,
      databaseUrl: db.url,
      queuePrefix: prefix,
      workerConcurrency: 2,
      rangeSize: 20,
      rpcBatchSize: 20,
      pollIntervalMs: 1_000,
      label: 'http',
      // one client (this bench) measures each route's cost: its per-client limits stay on, set past what it sends
      env: {
        ADMIN_TOKEN: tokens.admin,
        PLATFORM_TOKEN: tokens.platform,
        RATE_LIMIT_MAX: '1000000000',
        REGISTER_RATE_LIMIT_MAX: '1000000000',
        VALIDATE_RATE_LIMIT_MAX: '1000000000',
        VALIDATE_RPC_MAX: '1000000000',
      },
      ...(cpuProfileDir && { cpuProfileDir }),
    })
    await waitForHealth(service, 60_000)
    const url = service.url
    if (indexerAvailable) {
      // the service indexes the small chain first, so validation answers from the index
      const indexedThrough = createProgressReader(db.sql, truth.chainId)
      const deadline = Date.now() + 120_000
      while ((await indexedThrough()) < truth.lastBlock) {
        if (Date.now() > deadline) throw new Error(`the service did not index ${truth.lastBlock} blocks within 120 s:\n${service.tail()}`)
        await sleep(100)
      }
    }
    const routes = await routesOf(url)
    const notificationRoutes = ['/v1/admin/projects', '/v1/platform/pins']
    const missing = notificationRoutes.find((route) => !routes.has(route))
    const setup = missing ? undefined : await setUpNotifications(url, tokens)

    const scenarios = [
      newRegistrationScenario(),
      repeatedRegistrationScenario(),
      validationScenario(
        routes,
        served.chain.expectedIndex().attributions.find((row) => row.kind === 'transaction' && row.status === 'success')!,
        indexerAvailable,
      ),
      ...notificationScenarios(routes, setup, missing && `${missing} is not in /openapi.json yet`),
    ]
    // each scenario's request must succeed before it is measured, or req/s would count errors
    const registration = scenarios[1]!
    await expectStatus('registration', call(url, 'POST', registration.request.path, JSON.parse(registration.request.body!)), 200)
    const validation = scenarios[2]!
    if (!validation.skipped) {
      const answer = await expectStatus('validation', call(url, 'GET', validation.request.path), 200)
      if (answer.source !== 'index' || answer.attributed !== true) throw new Error(`validation did not answer from the index: ${JSON.stringify(answer)}`)
    }

    const floor: Request = { method: 'GET', path: '/healthz' }
    for (const scenario of scenarios) {
      // a feature the bench cannot exercise is broken, not skipped
      if (scenario.skipped) throw new Error(`http: ${scenario.name}: cannot run: ${scenario.skipped}`)
      if (params.warmupDuration > 0) {
        await measure(url, floor, scenario.connections, params.warmupDuration)
        await measure(url, scenario.request, scenario.connections, params.warmupDuration)
      }
      const rounds: ScenarioResult['rounds'] = []
      let profileWindow = ''
      for (let rep = 0; rep < params.reps; rep++) {
        const floorRun = await measure(url, floor, scenario.connections, params.duration)
        const fromUs = process.hrtime.bigint() / 1000n
        const scenarioRun = await measure(url, scenario.request, scenario.connections, params.duration)
        profileWindow = `${fromUs}:${process.hrtime.bigint() / 1000n}`
        if (scenarioRun.non2xx > 0 || scenarioRun.errors > 0) {
          throw new Error(`${scenario.name}: ${scenarioRun.non2xx} non-2xx answers and ${scenarioRun.errors} errors under load:\n${service.tail()}`)
        }
        rounds.push({ floor: floorRun, scenario: scenarioRun, ratio: scenarioRun.rps / floorRun.rps })
      }
      const medianOf = (pick: (m: Measured) => number, side: 'floor' | 'scenario') => median(rounds.map((round) => pick(round[side])))
      const summary = (side: 'floor' | 'scenario'): Measured => ({
        rps: medianOf((m) => m.rps, side),
        p50: medianOf((m) => m.p50, side),
        p99: medianOf((m) => m.p99, side),
        non2xx: 0,
        errors: 0,
      })
      results.push({
        name: scenario.name,
        connections: scenario.connections,
        scenario: summary('scenario'),
        floor: summary('floor'),
        ratio: median(rounds.map((round) => round.ratio)),
        rounds,
        profileWindow,
      })
      const last = results.at(-1)!
      process.stdout.write(`http: ${scenario.name}: ${fmt(last.scenario.rps)} req/s vs /healthz ${fmt(last.floor.rps)} req/s, ratio ${ratio(last.ratio)}\n`)
    }
  } finally {
    await service?.stop()
    await db.drop().catch(() => {})
    await deleteRedisPrefix(prefix).catch(() => {})
    await served.close()
  }

  printTable(
    `http: autocannon, ${params.duration} s per run, median of ${params.reps}, each against /healthz on the same server in the same round`,
    ['scenario', 'conns', 'req/s', 'p50 ms', 'p99 ms', '/healthz req/s', 'ratio'],
    results.map((r) => [r.name, r.connections, fmt(r.scenario.rps), fmt(r.scenario.p50, 1), fmt(r.scenario.p99, 1), fmt(r.floor.rps), ratio(r.ratio)]),
  )
  const find = (prefix: string) => results.find((r) => r.name.startsWith(prefix))
  const ratioTarget = (prefix: string, name: string): Target => {
    const found = find(prefix)
    return found
      ? { name, goal: '≥ 0.3× /healthz', actual: ratio(found.ratio), met: found.ratio >= 0.3 }
      : { name, goal: '≥ 0.3× /healthz', actual: `skipped: ${Object.entries(skipped).find(([n]) => n.startsWith(prefix))?.[1] ?? 'not run'}`, met: null }
  }
  const send = find('send')
  return {
    params,
    figures: { scenarios: results, skipped },
    targets: [
      ratioTarget('registration of new', 'http registration (new wallets)'),
      ratioTarget('registration of a known', 'http registration (repeated wallet)'),
      ratioTarget('validation', 'http validation'),
      send
        ? { name: 'http send(1,000)', goal: 'p50 < 100 ms', actual: `${fmt(send.scenario.p50, 1)} ms`, met: send.scenario.p50 < 100 }
        : { name: 'http send(1,000)', goal: 'p50 < 100 ms', actual: `skipped: ${Object.entries(skipped).find(([n]) => n.startsWith('send'))?.[1] ?? 'not run'}`, met: null },
    ],
  }
}
