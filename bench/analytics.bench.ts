import { setTimeout as sleep } from 'node:timers/promises'
import type postgres from 'postgres'
import type { Attributed } from '../src/attribution/decode.js'
import { closeDatabase, createDatabase } from '../src/db/client.js'
import { migrateDatabase } from '../src/db/migrate.js'
import { commitRange } from '../src/store/commit.js'
import { insertAttributionRows, migrateThroughBackfills, runBackfills, UPGRADE_CHAINS } from '../test/support/upgrade.js'
import type { Bench } from './lib/bench.js'
import { createBenchDatabase, deleteRedisPrefix, startIndexerProcess, uniqueName, type IndexerProcess } from './lib/indexer.js'
import { fmt, printTable, ratio, type Target } from './lib/report.js'
import { median, percentile } from './lib/stats.js'

/**
 * The analytics read endpoints over a database holding N attribution rows
 * (1M; 20k with --quick), each timed against /healthz on the same API
 * process in the same round (p50 of sequential keep-alive requests, the
 * client in this process, the server in its own), and the attribution
 * stream delivering one commit to 1,000 subscribers (50 with --quick).
 * Each endpoint is timed on two API processes over the same database: one
 * as configured (answers reused until the next commit), one with
 * ANALYTICS_CACHE_MS=0 (every request runs its queries).
 *
 * Rows and their aggregates are built the way an upgrade builds them
 * (test/support/upgrade.ts): rows written straight into a database migrated
 * through the last migration with a backfill section, the backfills run,
 * then the later migrations convert them — a million rows' aggregates in a
 * minute or two. That the upgrade path is right is the upgrade test's job
 * (test/analytics/upgrade-backfills.test.ts); here it only has to finish.
 */
const CODES = 2_000
const SENDERS = 50_000
const BASE = UPGRADE_CHAINS.base
const DEVNET = UPGRADE_CHAINS.devnet

async function generate(sql: postgres.Sql, rows: number) {
  await insertAttributionRows(sql, { rows, codes: CODES, senders: SENDERS })
  await runBackfills(sql)
  // what the follower and workers leave behind: done ranges, a few pending ones, the head
  await sql`
    insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash, status, tx_count, attribution_count, done_at, attempts)
    select ${BASE}::int, r * 50, r * 50 + 49, '0x', '0x', case when r >= 2490 then 'pending' else 'done' end, 400, 50,
      case when r < 2490 then now() - (2490 - r) * interval '1 second' end, case when r >= 2495 then 6 else 0 end
    from generate_series(0, 2499) r`
  await sql`insert into chain_state (chain_id, head_block, head_hash) values (${BASE}, 125000, '0x'), (${DEVNET}, 125000, '0x')`
  // the rows went in behind the commit statement's back, as an upgrade's existing rows do: the windows are built from them
  await sql`update window_bounds set ready = false`
  // a month of rows in a live database has been through autovacuum: statistics, and all-visible pages for index-only scans
  await sql`vacuum analyze`
}

async function waitForWindows(sql: postgres.Sql) {
  const deadline = Date.now() + 300_000
  while ((await sql<{ ready: boolean }[]>`select bool_and(ready) as ready from window_bounds`)[0]!.ready !== true) {
    if (Date.now() > deadline) throw new Error('the API did not build the rolling windows within 300 s')
    await sleep(200)
  }
}

type Timing = { p50: number; p99: number }

async function waitForHealth(service: IndexerProcess) {
  const deadline = Date.now() + 60_000
  while (!(await fetch(`${service.url}/healthz`).then((r) => r.ok, () => false))) {
    if (service.exited() || Date.now() > deadline) throw new Error(`the API did not start:\n${service.tail()}`)
    await sleep(100)
  }
}

/** Sequential keep-alive requests, the endpoint and /healthz alternating so both see the same machine state. */
async function timeAgainstFloor(url: string, path: string, requests: number): Promise<{ endpoint: Timing; floor: Timing }> {
  const once = async (target: string) => {
    const started = performance.now()
    const response = await fetch(`${url}${target}`)
    await response.arrayBuffer()
    if (response.status !== 200) throw new Error(`${target}: HTTP ${response.status}`)
    return performance.now() - started
  }
  for (let i = 0; i < Math.min(5, requests); i++) {
    await once('/healthz')
    await once(path)
  }
  const endpoint: number[] = []
  const floor: number[] = []
  for (let i = 0; i < requests; i++) {
    floor.push(await once('/healthz'))
    endpoint.push(await once(path))
  }
  return {
    endpoint: { p50: median(endpoint), p99: percentile(endpoint, 99) },
    floor: { p50: median(floor), p99: percentile(floor, 99) },
  }
}

/** `count` open SSE subscriptions that record when each first sees event id > `after`. */
async function openSubscribers(url: string, count: number) {
  const controllers: AbortController[] = []
  const seen: Array<Map<number, number>> = []
  const ready: Array<Promise<void>> = []
  for (let index = 0; index < count; index++) {
    const controller = new AbortController()
    const times = new Map<number, number>()
    controllers.push(controller)
    seen.push(times)
    ready.push(
      (async () => {
        const response = await fetch(`${url}/v1/attribution/stream`, { signal: controller.signal })
        if (response.status !== 200) throw new Error(`subscriber ${index}: HTTP ${response.status}`)
        void (async () => {
          const decoder = new TextDecoder()
          let buffer = ''
          try {
            for await (const chunk of response.body!) {
              buffer += decoder.decode(chunk as Uint8Array, { stream: true })
              for (const match of buffer.matchAll(/^id: (\d+)$/gm)) if (!times.has(Number(match[1]))) times.set(Number(match[1]), performance.now())
              buffer = buffer.slice(buffer.lastIndexOf('\n\n') + 2)
            }
          } catch {
            // aborted at the end
          }
        })()
      })(),
    )
  }
  await Promise.all(ready)
  return { seen, close: () => controllers.forEach((controller) => controller.abort()) }
}

/**
 * Every request and subscriber of the bench comes from this one process: the per-client limits that keep a
 * hostile client from holding the server (docs/limits.md) would refuse the bench's thousand subscribers.
 */
const ONE_CLIENT_MAY_DO_ALL = { RATE_LIMIT_MAX: '1000000000', HTTP_MAX_CONNECTIONS_PER_IP: '4000', STREAM_MAX_SUBSCRIBERS_PER_IP: '4000' }

export const analytics: Bench = async ({ quick }) => {
  const params = { rows: quick ? 20_000 : 1_000_000, requests: quick ? 30 : 100, uncachedRequests: quick ? 10 : 15, subscribers: quick ? 50 : 1_000, commits: quick ? 2 : 7 }
  const db = await createBenchDatabase('bench_analytics')
  const prefix = uniqueName('bench')
  let service: IndexerProcess | undefined
  let cold: IndexerProcess | undefined
  type Row = { name: string; path: string; endpoint: Timing; floor: Timing; ratio: number; cold: Timing; coldFloor: Timing; coldRatio: number }
  const endpoints: Row[] = []
  let stream: { deliveries: number[]; single: number[] } = { deliveries: [], single: [] }
  try {
    // the API alone over the generated rows: no chain to follow, no rate limit in the way
    const startApi = (label: string, env: Record<string, string>) =>
      startIndexerProcess({ command: 'api', rpcUrl: 'http://127.0.0.1:9', chainId: BASE, databaseUrl: db.url, queuePrefix: prefix, pollIntervalMs: 1_000, label, env: { ...ONE_CLIENT_MAY_DO_ALL, ...env } })
    await migrateThroughBackfills(db.url)
    const generating = performance.now()
    await generate(db.sql, params.rows)
    // the migrations after the backfills convert what they built, then autovacuum's work again
    await migrateDatabase(db.url)
    await db.sql`vacuum analyze`
    const generatedMs = performance.now() - generating
    process.stdout.write(`analytics: ${fmt(params.rows)} rows and their aggregates generated in ${fmt(generatedMs / 1000, 1)} s\n`)
    // started over the rows as after an upgrade: the first API builds the rolling windows once, before the clock runs
    // every subscriber comes from this one address: the per-client cap is raised past them (and stays on)
    service = await startApi('analytics', {
      STREAM_MAX_SUBSCRIBERS: String(params.subscribers + 10),
      STREAM_MAX_SUBSCRIBERS_PER_IP: String(params.subscribers + 10),
    })
    await waitForHealth(service)
    const building = performance.now()
    await waitForWindows(db.sql)
    process.stdout.write(`analytics: rolling windows built in ${fmt((performance.now() - building) / 1000, 1)} s\n`)
    // the same API with the commit-invalidated cache off: what a question costs the first time after a commit
    cold = await startApi('analytics-cold', { ANALYTICS_CACHE_MS: '0' })
    await waitForHealth(cold)

    const [busiest] = await db.sql<{ code: string }[]>`select code from code_daily_totals group by code order by sum(success_count) desc limit 1`
    const code = busiest!.code
    const firstPage = (await (await fetch(`${service.url}/v1/analytics/codes/${code}/attributions?limit=50`)).json()) as { nextCursor?: string }
    const paths: Array<[string, string]> = [
      ['summary 24h', '/v1/analytics/summary?window=24h'],
      ['summary 7d (hourly series)', '/v1/analytics/summary?window=7d'],
      ['summary 30d', '/v1/analytics/summary?window=30d'],
      ['summary all', '/v1/analytics/summary?window=all'],
      ['summary 7d, one chain', `/v1/analytics/summary?window=7d&chainId=${BASE}`],
      ['leaderboard 24h', '/v1/analytics/leaderboard?window=24h'],
      ['leaderboard 7d', '/v1/analytics/leaderboard?window=7d'],
      ['leaderboard 30d include=invalid', '/v1/analytics/leaderboard?window=30d&include=invalid'],
      ['leaderboard all', '/v1/analytics/leaderboard?window=all'],
      ['leaderboard 7d CSV', '/v1/analytics/leaderboard?window=7d&format=csv'],
      ['code (busiest), 30 days + unique senders', `/v1/analytics/codes/${code}`],
      ['code hourly 7d', `/v1/analytics/codes/${code}/hourly?window=7d`],
      ['code attributions, first page', `/v1/analytics/codes/${code}/attributions?limit=50`],
      ['code attributions, second page', `/v1/analytics/codes/${code}/attributions?limit=50&cursor=${firstPage.nextCursor}`],
      ['code attributions, reverted only', `/v1/analytics/codes/${code}/attributions?limit=50&status=reverted`],
      ['indexer status', '/v1/indexer/status'],
    ]
    for (const [name, path] of paths) {
      const measured = await timeAgainstFloor(service.url, path, params.requests)
      const uncached = await timeAgainstFloor(cold.url, path, params.uncachedRequests)
      endpoints.push({
        name, path, ...measured, ratio: measured.endpoint.p50 / measured.floor.p50,
        cold: uncached.endpoint, coldFloor: uncached.floor, coldRatio: uncached.endpoint.p50 / uncached.floor.p50,
      })
      process.stdout.write(
        `analytics: ${name}: p50 ${fmt(measured.endpoint.p50, 2)} ms vs /healthz ${fmt(measured.floor.p50, 2)} ms; uncached ${fmt(uncached.endpoint.p50, 2)} ms\n`,
      )
    }

    stream = await measureStream(service.url, db.url, params.subscribers, params.commits)
  } finally {
    await service?.stop()
    await cold?.stop()
    await db.drop().catch(() => {})
    await deleteRedisPrefix(prefix).catch(() => {})
  }

  printTable(
    `analytics: ${fmt(params.rows)} attribution rows; sequential keep-alive requests, ${params.requests} per endpoint alternating with /healthz`,
    ['endpoint', 'p50 ms', 'p99 ms', '/healthz p50 ms', 'p50 ratio', 'uncached p50 ms', 'uncached p99 ms', 'uncached ratio'],
    endpoints.map((e) => [
      e.name, fmt(e.endpoint.p50, 2), fmt(e.endpoint.p99, 2), fmt(e.floor.p50, 2), ratio(e.ratio, 1),
      fmt(e.cold.p50, 2), fmt(e.cold.p99, 2), ratio(e.coldRatio, 1),
    ]),
  )
  const deliveryMedian = median(stream.deliveries)
  const singleMedian = median(stream.single)
  printTable(
    `stream: one commit to ${params.subscribers} subscribers, median of ${params.commits} commits`,
    ['figure', 'ms'],
    [
      ['commit → every subscriber has it', fmt(deliveryMedian, 1)],
      ['commit → first subscriber has it (floor)', fmt(singleMedian, 1)],
    ],
  )
  const slowest = endpoints.reduce((worst, e) => (e.endpoint.p50 > worst.endpoint.p50 ? e : worst))
  const slowestCold = endpoints.reduce((worst, e) => (e.cold.p50 > worst.cold.p50 ? e : worst))
  return {
    params,
    figures: { endpoints, stream: { ...stream, deliveryMedianMs: deliveryMedian, firstSubscriberMedianMs: singleMedian } },
    targets: [
      { name: 'analytics read endpoints p50', goal: '< 5 ms each', actual: `slowest ${slowest.name}: ${fmt(slowest.endpoint.p50, 2)} ms (${ratio(slowest.ratio, 1)} /healthz)`, met: slowest.endpoint.p50 < 5 },
      {
        name: 'analytics read endpoints p50, uncached',
        goal: '< 5 ms each',
        actual: `slowest ${slowestCold.name}: ${fmt(slowestCold.cold.p50, 2)} ms (${ratio(slowestCold.coldRatio, 1)} /healthz)`,
        met: slowestCold.cold.p50 < 5,
      },
      { name: `stream to ${params.subscribers} subscribers`, goal: '< 1,000 ms', actual: `${fmt(deliveryMedian, 1)} ms`, met: deliveryMedian < 1_000 },
    ] satisfies Target[],
  }
}

/** Commits ranges through the real commit statement and times their events reaching every subscriber. */
async function measureStream(url: string, databaseUrl: string, subscribers: number, commits: number) {
  const db = createDatabase({ url: databaseUrl, poolSize: 2 })
  const open = await openSubscribers(url, subscribers)
  const deliveries: number[] = []
  const single: number[] = []
  try {
    for (let round = 0; round < commits; round++) {
      const block = 10_000_000 + round
      const job = { chainId: BASE, fromBlock: block, toBlock: block, parentHash: '0x01' as const, toHash: `0x${round.toString(16).padStart(2, '0')}` as `0x${string}` }
      await db.$client`insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash) values (${BASE}, ${block}, ${block}, ${job.parentHash}, ${job.toHash})`
      const attribution = { kind: 'attributed', schemaId: 0, codes: ['bc_streamed'], entries: [{ code: 'bc_streamed', role: 'service', valid: true }], suffix: '0x00', suffixBytes: 1, suffixGas: 4 } as unknown as Attributed
      const committedAt = performance.now()
      await commitRange(db, {
        job,
        blocks: [],
        txCount: 1,
        rows: [{
          code: 'bc_streamed',
          record: {
            kind: 'transaction', txHash: `0x${'cd'.repeat(31)}${round.toString(16).padStart(2, '0')}`, txIndex: 0, blockNumber: block, blockHash: job.toHash,
            blockTimestamp: Math.floor(Date.now() / 1000), userOpIndex: -1, userOpHash: undefined, sender: '0x0000000000000000000000000000000000000001',
            target: null, status: 'success', actualGasCost: undefined, attribution,
          },
          resolution: { status: 'unregistered', wallet: null, registry: null },
        }],
        malformed: [],
      })
      const [event] = await db.$client<{ id: string }[]>`select max(id)::text as id from attribution_events`
      const id = Number(event!.id)
      const deadline = Date.now() + 10_000
      while (open.seen.some((times) => !times.has(id))) {
        if (Date.now() > deadline) throw new Error(`stream: ${open.seen.filter((times) => !times.has(id)).length} subscribers never got event ${id}`)
        await sleep(5)
      }
      const arrivals = open.seen.map((times) => times.get(id)! - committedAt)
      deliveries.push(Math.max(...arrivals))
      single.push(Math.min(...arrivals))
    }
  } finally {
    open.close()
    await closeDatabase(db)
  }
  return { deliveries, single }
}
