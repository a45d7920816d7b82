import { execFileSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { appendTruth, emptyTruth, type GroundTruth } from '../../devnet/ledger.js'
import { indexedThrough } from '../../src/store/ranges.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { chainsEnv } from '../support/processes.js'
import { createSecrets, randomWallet, seedNotifications, startApiProcess, type ApiProcess, type NotificationFixture } from './support/api-fixture.js'
import { chainTransactionCount, compareWithTruth } from './support/ground-truth.js'
import { send } from './support/http-fuzz.js'
import { createFaultReport } from './support/report.js'
import { leakedSecrets, until } from './support/roles.js'
import { faultScale, faultSeed, knobs } from './support/scale.js'
import { createTrialDatabase, startPrivateServices, type PrivateServices, type TrialDatabase } from './support/services.js'

/**
 * 3. Outages: Redis, then Postgres, taken away for 30 s while one
 * all-in-one process (`attribution start`: API, follower, workers, delivery
 * worker) indexes a chain that keeps growing and answers a steady mix of API
 * requests. While a dependency is down every request is answered within a
 * bound with its contract's outage status; afterwards the same process,
 * never restarted, answers normally, indexes every block once and holds
 * totals equal to ground truth, and no notification was half written.
 */

/** No answer within this long is a hang. */
const ANSWER_DEADLINE_MS = 15_000
/** Requests sent this soon after a dependency went away (or before it is confirmed back) may see either world. */
const TRANSITION_MS = 1_500
/** After readiness is back, this long for every pooled connection to have noticed. */
const SETTLE_MS = 3_000

let services: PrivateServices
let chain: TestChain
let database: TrialDatabase
let service: ApiProcess
let fixture: NotificationFixture
const secrets = createSecrets()
const truth: GroundTruth = emptyTruth()
let knownTxHash: string

type Phase = 'steady' | 'transition' | 'down'
type Outage = 'redis' | 'postgres'

type Endpoint = {
  name: string
  request(n: number): { method: string; path: string; headers?: Record<string, string>; body?: unknown }
  /** Statuses when everything is up. */
  normal: number[]
  /** Statuses while each dependency is down (the normal ones when it does not use it). */
  down: Record<Outage, number[]>
}

const apiKey = () => fixture.keys.A.apiKey
const admin = () => ({ authorization: `Bearer ${secrets.adminToken}` })
const platform = () => ({ authorization: `Bearer ${secrets.platformToken}` })

const endpoints: Endpoint[] = [
  { name: 'register', request: () => ({ method: 'POST', path: '/v1/agents/builder-codes', body: { walletAddress: randomWallet() } }), normal: [200], down: { postgres: [503], redis: [200] } },
  { name: 'lookup', request: () => ({ method: 'GET', path: '/v1/agents/builder-codes/bc_00000000' }), normal: [404], down: { postgres: [503], redis: [404] } },
  { name: 'validate', request: () => ({ method: 'GET', path: `/v1/attribution/validate?type=transaction&hash=${knownTxHash}` }), normal: [200], down: { postgres: [503], redis: [200] } },
  { name: 'analytics', request: () => ({ method: 'GET', path: '/v1/analytics/codes/baseapp' }), normal: [200], down: { postgres: [503], redis: [200] } },
  { name: 'leaderboard', request: () => ({ method: 'GET', path: '/v1/analytics/leaderboard?window=all' }), normal: [200], down: { postgres: [503], redis: [200] } },
  {
    name: 'users',
    request: () => ({ method: 'GET', path: `/v1/notifications/app/users?app_url=${encodeURIComponent(fixture.apps.A)}`, headers: { 'x-api-key': apiKey() } }),
    normal: [200],
    down: { postgres: [503], redis: [200] },
  },
  {
    // the contract's one 500: the preferences store could not answer
    name: 'status',
    request: () => ({ method: 'POST', path: '/v1/notifications/app/user/status', headers: { 'x-api-key': apiKey() }, body: { app_url: fixture.apps.A, wallet_address: fixture.wallets.enabled[0] } }),
    normal: [200],
    down: { postgres: [500], redis: [200] },
  },
  {
    name: 'send',
    request: (n) => ({
      method: 'POST',
      path: '/v1/notifications/send',
      headers: { 'x-api-key': apiKey() },
      body: { app_url: fixture.apps.A, wallet_addresses: [...fixture.wallets.enabled, fixture.wallets.disabled[0]], title: `outage ${n}`, message: `message ${n}` },
    }),
    normal: [200],
    down: { postgres: [503], redis: [503] },
  },
  { name: 'pin', request: () => ({ method: 'PUT', path: '/v1/platform/pins', headers: platform(), body: { app_url: fixture.apps.B, wallet_address: randomWallet(), pinned: true, notifications_enabled: true } }), normal: [200], down: { postgres: [503], redis: [200] } },
  { name: 'inbox', request: () => ({ method: 'GET', path: `/v1/platform/inbox?wallet_address=${fixture.wallets.enabled[0]}`, headers: platform() }), normal: [200], down: { postgres: [503], redis: [200] } },
  { name: 'admin', request: (n) => ({ method: 'POST', path: '/v1/admin/projects', headers: admin(), body: { name: `outage project ${n}` } }), normal: [201], down: { postgres: [503], redis: [201] } },
  { name: 'readyz', request: () => ({ method: 'GET', path: '/readyz' }), normal: [200], down: { postgres: [503], redis: [503] } },
  { name: 'healthz', request: () => ({ method: 'GET', path: '/healthz' }), normal: [200], down: { postgres: [200], redis: [200] } },
]

type Answer = { endpoint: string; phase: Phase; status: number | 'no answer'; ms: number; n: number; sentAt: number }

/** The API traffic: two lanes cycling through every endpoint, each answer filed under the phase it was sent in. */
/** Numbers requests across every trial: a send's title (`outage <n>`) names one request of the whole file. */
let requestCounter = 0

function startApiTraffic(phaseNow: () => Phase) {
  const answers: Answer[] = []
  let running = true
  async function lane(offset: number) {
    for (let i = offset; running; i += 2) {
      const endpoint = endpoints[i % endpoints.length]!
      const n = requestCounter++
      const sentIn = phaseNow()
      const sentAt = Date.now()
      const { method, path, headers = {}, body } = endpoint.request(n)
      const answer = await send(
        service.url,
        { method, path, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' }, body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)) },
        ANSWER_DEADLINE_MS,
      )
      // strictly 'down' only when sent and answered while down: a request waiting as the dependency came back may succeed
      const answeredIn = phaseNow()
      const phase: Phase = sentIn === answeredIn ? sentIn : 'transition'
      answers.push({ endpoint: endpoint.name, phase, status: 'status' in answer ? answer.status : 'no answer', ms: answer.ms, n, sentAt })
      await sleep(25)
    }
  }
  const lanes = [lane(0), lane(1)]
  return {
    answers,
    async stop() {
      running = false
      await Promise.all(lanes)
    },
  }
}

/** New blocks with attributed traffic every few hundred milliseconds, recorded into the ground truth. */
function startChainTraffic() {
  let running = true
  const loop = (async () => {
    while (running) {
      appendTruth(truth, await sendMixedTraffic(chain, { transactions: 4, blocks: 1 }))
      await sleep(300)
    }
  })()
  return {
    async stop() {
      running = false
      await loop
    },
  }
}

beforeAll(async () => {
  ;[services, chain] = await Promise.all([startPrivateServices(), startTestChain({ seed: faultSeed })])
  appendTruth(truth, await sendMixedTraffic(chain, { transactions: 1_200, blocks: 60 }))
  knownTxHash = truth.attributions.find((row) => row.kind === 'transaction' && row.status === 'success')!.txHash
  database = await createTrialDatabase(services.postgres, 'outages', 2)
  service = await startApiProcess(
    'start',
    {
      DATABASE_URL: database.url,
      REDIS_URL: services.redis.url,
      QUEUE_PREFIX: 'outages',
      // answers cached before the outage would be served for up to 5 s: this trial checks what the database says
      ANALYTICS_CACHE_MS: '0',
      LOG_LEVEL: 'info',
      DEVNET: 'false',
      ADMIN_TOKEN: secrets.adminToken,
      PLATFORM_TOKEN: secrets.platformToken,
      CURSOR_SECRET: secrets.cursorSecret,
      RATE_LIMIT_MAX: '100000000',
      REGISTER_RATE_LIMIT_MAX: '100000000',
      VALIDATE_RATE_LIMIT_MAX: '100000000',
      VALIDATE_RPC_MAX: '100000000',
      CHAINS: chainsEnv([{ ...chain.config, confirmations: 0, pollIntervalMs: 100 }]),
      RANGE_SIZE: '5',
      WORKER_CONCURRENCY: '2',
      JOB_LOCK_MS: '2000',
    },
    'outages-start',
  )
  fixture = await seedNotifications(service.url, secrets)
}, 300_000)

afterAll(async () => {
  await service?.role.kill('SIGTERM')
  await database?.drop()
  await chain?.stop()
  await services?.stop()
})

const through = async () => (await indexedThrough(database.db.$client, chain.chainId).catch(() => undefined)) ?? -1

/** Every recorded notification has all its deliveries (never half a batch); those a 503 refused were never recorded. */
async function notificationIntegrity(answers: Answer[]) {
  const rows = await database.db.$client<{ title: string; recipient_count: number; deliveries: number; delivered: number }[]>`
    select n.title, n.recipient_count, count(d.*)::int as deliveries, count(d.*) filter (where d.status = 'delivered')::int as delivered
    from notifications n left join notification_deliveries d on d.notification_id = n.id
    where n.title like 'outage %' group by n.id`
  const recorded = new Map(rows.map((row) => [row.title, row]))
  const sends = answers.filter((answer) => answer.endpoint === 'send')
  const halfWritten = rows.filter((row) => row.deliveries !== row.recipient_count).length
  const refusedButRecorded = sends.filter((answer) => answer.status !== 200 && recorded.has(`outage ${answer.n}`)).length
  const acceptedButMissing = sends.filter((answer) => answer.status === 200 && !recorded.has(`outage ${answer.n}`)).length
  const undelivered = rows.reduce((sum, row) => sum + row.deliveries - row.delivered, 0)
  return { recorded: rows.length, halfWritten, refusedButRecorded, acceptedButMissing, undelivered }
}

/** The API's request failures logged at or after `since` (epoch ms), with their errors: at most five. */
function requestFailuresLoggedSince(log: string, since: number): string[] {
  const failures: string[] = []
  for (const line of log.split('\n')) {
    if (!line.includes('"dependency unavailable"') && !line.includes('"request failed"')) continue
    try {
      const entry = JSON.parse(line) as { time: number; msg: string; req?: { url?: string }; err?: { message?: string; code?: string; cause?: { message?: string } } }
      if (entry.time < since) continue
      failures.push(`logged at +${entry.time - since} ms: ${entry.msg} (${entry.req?.url ?? '?'}): ${entry.err?.code ?? ''} ${entry.err?.message ?? ''} ${entry.err?.cause?.message ?? ''}`.slice(0, 300))
    } catch {
      // not a log entry of ours
    }
    if (failures.length === 5) break
  }
  return failures
}

/** Answers outside what the contract allows for their phase, and hangs. */
function judge(answers: Answer[], outage: Outage) {
  const unexpected: string[] = []
  let fiveXX = 0
  let hangs = 0
  for (const answer of answers) {
    const endpoint = endpoints.find((candidate) => candidate.name === answer.endpoint)!
    if (answer.status === 'no answer') {
      hangs++
      unexpected.push(`${answer.endpoint} (${answer.phase}) gave no answer in ${answer.ms} ms`)
      continue
    }
    const allowed =
      answer.phase === 'steady' ? endpoint.normal : answer.phase === 'down' ? endpoint.down[outage] : [...endpoint.normal, ...endpoint.down[outage]]
    if (!allowed.includes(answer.status)) {
      unexpected.push(`${answer.endpoint} (${answer.phase}): ${answer.status}`)
      if (answer.status >= 500) fiveXX++
    }
  }
  return { unexpected, fiveXX, hangs }
}

describe('3. Outages during indexing and API traffic', () => {
  const reports = {
    redis: createFaultReport({
      fault: '3a-outage-redis',
      title: `3a. Redis down ${knobs.outageSeconds} s`,
      checked:
        `redis-server killed (restarting empty, its queues lost) and, in the full run, hung (SIGSTOP) for ${knobs.outageSeconds} s under one 'attribution start' process while blocks keep coming and two lanes of requests cycle through registration, lookup, validation, analytics, leaderboard, notification users/status/send, pins, inbox, admin, readyz, healthz; ` +
        'while down: send and readyz 503, everything else answers normally, nothing unanswered within 15 s; after: same process, normal answers, index = ground truth through the head, ranges cover every block once, no notification half written or recorded for a refused send',
      testFile: 'test/faults/outages.test.ts',
      testName: 'Redis',
    }),
    postgres: createFaultReport({
      fault: '3b-outage-postgres',
      title: `3b. Postgres down ${knobs.outageSeconds} s`,
      checked:
        `the PostgreSQL cluster crashed (kill -9 of every process) and, in the full run, shut down (SIGINT) for ${knobs.outageSeconds} s under the same load; while down: 503 everywhere (500 from the status endpoint, as the contract says), healthz 200, nothing unanswered within 15 s; ` +
        'after: same process, normal answers, index = ground truth, every block once, no half-written notification',
      testFile: 'test/faults/outages.test.ts',
      testName: 'Postgres',
    }),
  }

  /**
   * How the dependency goes away. Redis: killed (restarting empty, its queues
   * lost) or hung (SIGSTOP: connections stay open, nothing answers). Postgres:
   * crashed (kill -9 of every process) or shut down (sessions terminated).
   */
  type Mode = 'crash' | 'hang' | 'shutdown'

  /** The private redis-server's pid, found by the unique port it listens on. */
  function redisPid(): number {
    const out = execFileSync('pgrep', ['-f', `redis-server 127.0.0.1:${services.redis.port}`], { encoding: 'utf8' }).trim().split('\n')
    if (out.length !== 1 || !out[0]) throw new Error(`expected one redis-server on port ${services.redis.port}, found ${out.join(',')}`)
    return Number(out[0])
  }

  function dependencyControls(outage: Outage, mode: Mode) {
    if (outage === 'redis' && mode === 'hang') {
      const pid = redisPid()
      return { takeDown: async () => void process.kill(pid, 'SIGSTOP'), bringBack: async () => void process.kill(pid, 'SIGCONT') }
    }
    if (outage === 'redis') return { takeDown: () => services.redis.stop(), bringBack: () => services.redis.start() }
    if (mode === 'shutdown') return { takeDown: () => services.postgres.stop(), bringBack: () => services.postgres.start() }
    return { takeDown: () => services.postgres.kill(), bringBack: () => services.postgres.start() }
  }

  async function outageTrial(outage: Outage, mode: Mode, trial: number) {
    const started = Date.now()
    const pid = service.role.child.pid
    let phase: Phase = 'steady'
    const chainTraffic = startChainTraffic()
    const apiTraffic = startApiTraffic(() => phase)
    const { takeDown, bringBack } = dependencyControls(outage, mode)
    let details: Record<string, unknown> = {}
    try {
      await sleep(2_000)
      const indexedBefore = await through()
      const headBefore = Number(await chain.client.getBlockNumber())
      phase = 'transition'
      await takeDown()
      await sleep(TRANSITION_MS)
      phase = 'down'
      await sleep(knobs.outageSeconds * 1_000 - TRANSITION_MS)
      phase = 'transition'
      const downFor = Date.now()
      await bringBack()
      await until('readiness back', async () => (await fetch(`${service.url}/readyz`)).status === 200, 120_000)
      const recoveredAfterMs = Date.now() - downFor
      await sleep(SETTLE_MS)
      phase = 'steady'
      const steadyAgainAt = Date.now()
      // a while of normal service on the same process
      await sleep(5_000)
      await apiTraffic.stop()
      await chainTraffic.stop()
      const head = Number(await chain.client.getBlockNumber())
      await until(`indexed through the head ${head}`, async () => (await through()) >= head, 180_000)
      const comparison = await compareWithTruth({ db: database.db, chainId: chain.chainId, truth, head, chainTransactions: await chainTransactionCount(chain.rpcUrl, head) })
      // queued deliveries reach the inbox once both dependencies are back: by their job, or, when the
      // job spent its retries during the outage, by the worker's sweep a minute after the send
      // not swallowed: a timeout is recorded with the trial's details and fails it (an undelivered notification is a loss)
      const deliveredInTime = await until('deliveries delivered', async () => (await notificationIntegrity(apiTraffic.answers)).undelivered === 0, 150_000).then(
        () => true,
        () => false,
      )
      const notifications = await notificationIntegrity(apiTraffic.answers)
      const verdict = judge(apiTraffic.answers, outage)
      // what the server logged of a failure answered in the steady phase after the outage: the cause, for whoever reads the report
      if (verdict.unexpected.length > 0) {
        const lateFailures = apiTraffic.answers.filter((answer) => answer.phase === 'steady' && answer.sentAt >= steadyAgainAt && typeof answer.status === 'number' && answer.status >= 500)
        verdict.unexpected.push(
          ...lateFailures.map((answer) => `${answer.endpoint}: ${answer.status} sent ${answer.sentAt - steadyAgainAt} ms into the steady phase, answered in ${answer.ms} ms`),
          ...requestFailuresLoggedSince(service.role.log(), steadyAgainAt),
        )
      }
      const byPhase = (wanted: Phase) => apiTraffic.answers.filter((answer) => answer.phase === wanted)
      const downAnswers = byPhase('down')
      details = {
        mode,
        indexedBefore,
        headBefore,
        sameProcess: service.role.child.pid === pid && service.role.child.exitCode === null,
        recoveredAfterMs,
        deliveredInTime,
        requests: apiTraffic.answers.length,
        requestsWhileDown: downAnswers.length,
        slowestAnswerWhileDownMs: Math.max(0, ...downAnswers.map((answer) => answer.ms)),
        statusesWhileDown: Object.fromEntries(endpoints.map((endpoint) => [endpoint.name, [...new Set(downAnswers.filter((answer) => answer.endpoint === endpoint.name).map((answer) => answer.status))]])),
        ...verdict,
        unexpected: verdict.unexpected.slice(0, 20),
        notifications,
        ...comparison,
      }
      const ok =
        comparison.exact &&
        verdict.unexpected.length === 0 &&
        details.sameProcess === true &&
        notifications.halfWritten === 0 &&
        notifications.refusedButRecorded === 0 &&
        notifications.acceptedButMissing === 0 &&
        notifications.undelivered === 0 &&
        deliveredInTime
      reports[outage].record({ trial, lost: comparison.lost, doubled: comparison.doubled, fiveXX: verdict.fiveXX, inputs: apiTraffic.answers.length, ok, durationMs: Date.now() - started, details })
      return details
    } catch (error) {
      reports[outage].record({ trial, lost: 0, doubled: 0, ok: false, durationMs: Date.now() - started, details: { ...details, mode, error: String(error) } })
      throw error
    } finally {
      await apiTraffic.stop()
      await chainTraffic.stop()
    }
  }

  /** The full run takes each dependency away both ways; the reduced pass crashes each once. */
  const modes: Record<Outage, Mode[]> = faultScale === 'full' ? { redis: ['crash', 'hang'], postgres: ['crash', 'shutdown'] } : { redis: ['crash'], postgres: ['crash'] }

  it.each(modes.redis.map((mode, i) => [mode, i + 1] as const))(`Redis down ${knobs.outageSeconds} s (%s): outage answers while down, then exact totals and intact notifications on the same process`, async (mode, trial) => {
    const details = await outageTrial('redis', mode, trial)
    expect(details).toMatchObject({
      sameProcess: true,
      deliveredInTime: true,
      unexpected: [],
      hangs: 0,
      exact: true,
      notifications: { halfWritten: 0, refusedButRecorded: 0, acceptedButMissing: 0, undelivered: 0 },
    })
    expect(details.requestsWhileDown).toBeGreaterThan(10)
  })

  it.each(modes.postgres.map((mode, i) => [mode, i + 1] as const))(`Postgres down ${knobs.outageSeconds} s (%s): 503s (500 from status) while down, then exact totals on the same process`, async (mode, trial) => {
    const details = await outageTrial('postgres', mode, trial)
    expect(details).toMatchObject({
      sameProcess: true,
      deliveredInTime: true,
      unexpected: [],
      hangs: 0,
      exact: true,
      notifications: { halfWritten: 0, refusedButRecorded: 0, acceptedButMissing: 0, undelivered: 0 },
    })
    expect(details.requestsWhileDown).toBeGreaterThan(10)
  })

  it('logs of the process hold no API key or token', () => {
    const keys = Object.values(fixture.keys).map((key) => key.apiKey)
    expect(leakedSecrets([service.role.log()], [...keys, secrets.adminToken, secrets.platformToken, secrets.cursorSecret])).toEqual([])
  })
})
