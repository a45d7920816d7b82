/**
 * Measures the latency of POST /v1/notifications/send with 1,000 addresses
 * against the real server, Postgres, Redis and delivery worker. Not a test
 * (no assertions on time): run it by hand and read the numbers.
 *
 *   npx tsx test/notifications/measure-send.ts [sends=30]
 *
 * Uses DATABASE_URL's server (a throwaway database is created and dropped)
 * and REDIS_URL (a unique key prefix, deleted afterwards).
 */
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import postgres from 'postgres'
import type { Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { loadConfig } from '../../src/config/env.js'
import { closeDatabase, createDatabase } from '../../src/db/client.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { createServer } from '../../src/http/server.js'
import { createLogger } from '../../src/logger.js'
import { createDashboard } from '../../src/notifications/dashboard.js'
import { createDeliveryWorker } from '../../src/notifications/delivery-worker.js'
import { createPins } from '../../src/notifications/pins.js'
import { createRedis } from '../../src/redis/client.js'

const sends = Number(process.argv[2] ?? 30)
const suffix = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`
const baseDatabaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const databaseUrl = Object.assign(new URL(baseDatabaseUrl), { pathname: `/measure_send_${suffix}` }).toString()
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const prefix = `measure_send_${suffix}`

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

async function main() {
  await migrateDatabase(databaseUrl)
  const db = createDatabase({ url: databaseUrl, poolSize: 10 })
  const redis = createRedis(redisUrl, 'request')
  const logger = createLogger({ level: 'silent' })
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    RATE_LIMIT_MAX: '1000000',
    LOG_LEVEL: 'silent',
    DEVNET: 'false',
  })
  const server = await createServer({ config, db, redis, logger })
  const url = await server.listen({ host: '127.0.0.1', port: 0 })
  const worker = createDeliveryWorker({ db, redisUrl, prefix, logger })

  try {
    const dashboard = createDashboard({ db })
    const { projectId } = await dashboard.createProject({ name: 'measure', whitelisted: true })
    const { appUrl } = await dashboard.addApp(projectId, 'https://measure.example')
    const { apiKey } = await dashboard.createApiKey(projectId)
    const wallets: Address[] = Array.from({ length: 1000 }, () => privateKeyToAddress(generatePrivateKey()))
    const pins = createPins({ db })
    for (const walletAddress of wallets) await pins.upsertPin({ appUrl, walletAddress, pinned: true, notificationsEnabled: true })

    const send = async (title: string) => {
      const started = performance.now()
      const response = await fetch(`${url}/v1/notifications/send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        body: JSON.stringify({ app_url: appUrl, wallet_addresses: wallets, title, message: 'Latency measurement', target_path: '/m' }),
      })
      const body = (await response.json()) as { sentCount?: number }
      const elapsed = performance.now() - started
      if (response.status !== 200 || body.sentCount !== 1000) throw new Error(`send failed: ${response.status} ${JSON.stringify(body)}`)
      return elapsed
    }

    for (let index = 0; index < 3; index++) await send(`warm-up ${index}`)
    const fresh: number[] = []
    for (let index = 0; index < sends; index++) fresh.push(await send(`fresh ${index}`))
    // the same notifications again: every wallet is a 24 h duplicate, nothing is recorded
    const repeated: number[] = []
    for (let index = 0; index < sends; index++) repeated.push(await send(`fresh ${index}`))

    const deliveryStarted = performance.now()
    const sql = db.$client
    for (;;) {
      const [row] = await sql`select count(*)::int as n from notification_deliveries where status = 'queued'`
      if (row!.n === 0) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const drainMs = performance.now() - deliveryStarted
    const [inbox] = await sql`select count(*)::int as n from notification_inbox`

    const report = (label: string, samples: number[]) => {
      const sorted = [...samples].sort((a, b) => a - b)
      console.log(
        `${label.padEnd(34)} n=${sorted.length}  p50=${percentile(sorted, 50).toFixed(1)} ms  p99=${percentile(sorted, 99).toFixed(1)} ms  min=${sorted[0]!.toFixed(1)}  max=${sorted.at(-1)!.toFixed(1)}`,
      )
    }
    report('send 1,000 addresses (delivered)', fresh)
    report('send 1,000 addresses (duplicates)', repeated)
    console.log(`inbox entries written: ${inbox!.n}; queue drained ${drainMs.toFixed(0)} ms after the last send`)
  } finally {
    await worker.close()
    await server.close()
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      if (keys.length > 0) await redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
    redis.disconnect()
    await closeDatabase(db)
    const admin = postgres(Object.assign(new URL(baseDatabaseUrl), { pathname: '/postgres' }).toString(), { max: 1, onnotice: () => {} })
    await admin.unsafe(`drop database if exists "measure_send_${suffix}" with (force)`)
    await admin.end()
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
