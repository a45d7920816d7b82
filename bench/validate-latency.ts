/**
 * Latency of GET /v1/attribution/validate answered from the index, next to
 * the floor of the same run: GET /healthz on the same server (an HTTP round
 * trip that touches nothing). Prints medians and the ratio; not a test.
 *
 *   npx tsx bench/validate-latency.ts [requests=2000]
 *
 * Needs PostgreSQL and Redis on their local ports; starts its own anvil,
 * sends generated traffic, indexes it with the real indexer, and removes its
 * database and Redis keys afterwards.
 */
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { Registry as MetricsRegistry } from 'prom-client'
import { startIndexer } from '../src/bin/indexer.js'
import { loadConfig } from '../src/config/env.js'
import { closeDatabase, createDatabase } from '../src/db/client.js'
import { migrateDatabase } from '../src/db/migrate.js'
import { indexedThrough } from '../src/store/ranges.js'
import { createServer } from '../src/http/server.js'
import { createLogger } from '../src/logger.js'
import { createRedis } from '../src/redis/client.js'
import { sendMixedTraffic, startTestChain } from '../test/support/chain.js'

const REQUESTS = Number(process.argv[2] ?? 2_000)
const WARMUP = 200
const suffix = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`
const databaseName = `bench_validate_${suffix}`
const databaseUrl = `postgres://postgres@127.0.0.1:5432/${databaseName}`
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const prefix = `bench_validate_${suffix}`

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** Sequential requests (one in flight, like one dashboard user), each timed alone. */
async function timeRequests(urls: string[], count: number): Promise<number[]> {
  const times: number[] = []
  for (let i = 0; i < WARMUP + count; i++) {
    const started = process.hrtime.bigint()
    const response = await fetch(urls[i % urls.length]!)
    await response.arrayBuffer()
    const elapsed = Number(process.hrtime.bigint() - started) / 1e6
    if (response.status !== 200) throw new Error(`${urls[i % urls.length]} answered ${response.status}`)
    if (i >= WARMUP) times.push(elapsed)
  }
  return times.sort((a, b) => a - b)
}

function summary(name: string, sorted: number[]) {
  return `${name.padEnd(24)} median ${percentile(sorted, 50).toFixed(3)} ms   p90 ${percentile(sorted, 90).toFixed(3)} ms   p99 ${percentile(sorted, 99).toFixed(3)} ms`
}

async function main() {
  const chain = await startTestChain()
  const redis = createRedis(redisUrl, 'request')
  await migrateDatabase(databaseUrl)
  const db = createDatabase({ url: databaseUrl, poolSize: 10 })
  try {
    const truth = await sendMixedTraffic(chain, { transactions: 180, blocks: 20 })
    const head = Number(await chain.client.getBlockNumber())
    const config = loadConfig({
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      LOG_LEVEL: 'silent',
      DEVNET: 'false',
      CONFIRMATIONS: '0',
      POLL_INTERVAL_MS: '100',
      RPC_URL: chain.rpcUrl,
      CHAIN_ID: String(chain.chainId),
    })
    const logger = createLogger({ level: 'silent' })
    const indexer = await startIndexer({ config, chains: [chain.config], db, roles: { follower: true, worker: true }, logger, metricsRegistry: new MetricsRegistry() })
    while (((await indexedThrough(db.$client, chain.chainId)) ?? -1) < head) await new Promise((resolve) => setTimeout(resolve, 100))
    await indexer.stop()

    const server = await createServer({ config, db, redis, logger })
    const base = await server.listen({ host: '127.0.0.1', port: 0 })
    const hashes = truth.attributions.map((row) =>
      row.kind === 'transaction' ? { type: 'transaction', hash: row.txHash } : { type: 'userOperation', hash: row.userOpHash },
    )
    const validateUrls = [...new Set(hashes.filter((entry) => entry.hash).map((entry) => `${base}/v1/attribution/validate?type=${entry.type}&hash=${entry.hash}`))]
    const first = (await (await fetch(validateUrls[0]!)).json()) as { source: string }
    if (first.source !== 'index') throw new Error(`expected an answer from the index, got ${first.source}`)

    const floor = await timeRequests([`${base}/healthz`], REQUESTS)
    const validate = await timeRequests(validateUrls, REQUESTS)
    await server.close()

    console.log(`${REQUESTS} sequential requests each (after ${WARMUP} warm-up), ${validateUrls.length} distinct indexed hashes, node ${process.version}`)
    console.log(summary('GET /healthz (floor)', floor))
    console.log(summary('validate from index', validate))
    console.log(`ratio (median validate / median floor): ${(percentile(validate, 50) / percentile(floor, 50)).toFixed(2)}x`)
  } finally {
    await closeDatabase(db)
    await chain.stop()
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000)
      if (keys.length > 0) await redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
    redis.disconnect()
    const admin = postgres('postgres://postgres@127.0.0.1:5432/postgres', { max: 1, onnotice: () => {} })
    await admin.unsafe(`drop database if exists "${databaseName}" with (force)`)
    await admin.end()
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  },
)
