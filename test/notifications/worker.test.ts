import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/logger.js'
import { Queue } from 'bullmq'
import { createDeliveryQueue, deliveryJobId, DELIVERY_QUEUE_NAME } from '../../src/notifications/delivery-queue.js'
import { createDeliveryWorker, deliverNotification, notificationLockKey } from '../../src/notifications/delivery-worker.js'
import { contentHash } from '../../src/notifications/send.js'
import {
  adminClient,
  appClient,
  pinAll,
  randomWallet,
  setupNotifications,
  startRedisProxy,
  type NotificationEnv,
} from './support.js'
import { until } from '../support/poll.js'

/** The delivery worker against real Redis failures and a job that arrives before its rows. */
let env: NotificationEnv
let client: ReturnType<typeof appClient>
let appUrl: string
let projectId: string
const wallets = Array.from({ length: 20 }, randomWallet)

const rawSql = () => env.database.db.$client
const inboxCount = async () => (await rawSql()`select count(*)::int as n from notification_inbox`)[0]!.n as number

beforeAll(async () => {
  env = await setupNotifications()
  const admin = adminClient(env.api)
  projectId = await admin.createProject('worker')
  appUrl = await admin.addApp(projectId, 'https://worker.example')
  client = appClient(env.api, (await admin.createKey(projectId)).apiKey)
  await pinAll(env.api, appUrl, wallets, { pinned: true, notificationsEnabled: true })
})

afterAll(async () => {
  await env?.close()
})

describe('delivery worker', () => {
  it('keeps delivering after its Redis connections are reset', async () => {
    const proxy = await startRedisProxy(env.redis.url)
    const worker = createDeliveryWorker({
      db: env.database.db,
      redisUrl: proxy.url,
      prefix: env.redis.prefix,
      logger: createLogger({ level: 'silent' }),
    })
    try {
      const before = await inboxCount()
      expect((await client.send({ app_url: appUrl, wallet_addresses: wallets, title: 'Before the blip', message: 'm' })).body.sentCount).toBe(20)
      await until('first delivery', async () => (await inboxCount()) === before + 20)

      proxy.drop()
      expect((await client.send({ app_url: appUrl, wallet_addresses: wallets, title: 'After the blip', message: 'm' })).body.sentCount).toBe(20)
      await until('delivery after the reconnect', async () => (await inboxCount()) === before + 40, { timeoutMs: 30_000 })
    } finally {
      await worker.close()
      await proxy.close()
    }
  })

  it('delivers notifications whose job was lost (Redis dropped it, or it ran out of retries)', async () => {
    const before = await inboxCount()
    expect((await client.send({ app_url: appUrl, wallet_addresses: wallets, title: 'Lost job', message: 'm' })).body.sentCount).toBe(20)
    // the job disappears with every other of the queue, as when Redis restarts empty
    const queue = new Queue(DELIVERY_QUEUE_NAME, { connection: env.redis.redis, prefix: env.redis.prefix })
    await queue.obliterate({ force: true })
    await queue.close()
    const worker = createDeliveryWorker({
      db: env.database.db,
      redisUrl: env.redis.url,
      prefix: env.redis.prefix,
      logger: createLogger({ level: 'silent' }),
      staleAfterMs: 200,
      sweepIntervalMs: 100,
    })
    try {
      await until('the sweep delivers the stranded notification', async () => (await inboxCount()) === before + 20)
      const [queued] = await rawSql()`select count(*)::int as n from notification_deliveries where status = 'queued'`
      expect(queued!.n).toBe(0)
    } finally {
      await worker.close()
    }
  })

  it('a delivery that starts while the send transaction is open waits for its commit', async () => {
    const notificationId = randomUUID()
    const recipients = wallets.slice(5, 8)
    const content = { appUrl, title: 'Open transaction', message: 'm' }
    const hash = contentHash(content)
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let delivery: Promise<{ delivered: number }> | undefined
    let settledEarly = false
    // what the sender does: lock, write, (enqueue,) commit
    await env.database.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${notificationLockKey(notificationId)})`)
      await tx.execute(sql`insert into notifications (id, project_id, app_url, title, message, content_hash, recipient_count)
        values (${notificationId}, ${projectId}, ${appUrl}, ${content.title}, ${content.message}, ${hash}, ${recipients.length})`)
      await tx.execute(sql`insert into notification_deliveries (notification_id, wallet_address, content_hash)
        select ${notificationId}, wallet, ${hash} from unnest(${sql.param(recipients)}::text[]) as wallet`)
      delivery = deliverNotification(env.database.db, notificationId)
      delivery.then(() => (settledEarly = true), () => (settledEarly = true))
      // the proof the delivery got this far and waits on the lock: PostgreSQL shows it queued behind it
      // (in this test's database: pg_locks lists every database's locks, and other test files run meanwhile)
      void until('the delivery to wait on the notification lock', async () =>
        (await rawSql()`select 1 from pg_locks where locktype = 'advisory' and not granted
          and database = (select oid from pg_database where datname = current_database())`).length > 0,
      ).then(release)
      await released
      // checked before the commit: once it commits, the delivery may finish before this
      // transaction's own answer arrives (PostgreSQL releases the lock first)
      expect(settledEarly).toBe(false)
    })
    expect(await delivery).toEqual({ delivered: 3 })
  })

  it('retries a job whose rows appear later (written without the lock), then delivers it once', async () => {
    const worker = env.startWorker()
    const queue = createDeliveryQueue({ redisUrl: env.redis.url, prefix: env.redis.prefix })
    try {
      const notificationId = randomUUID()
      const recipients = wallets.slice(0, 5)
      const before = await inboxCount()
      // the job first, as inside a send transaction that has not committed yet
      await queue.enqueue(notificationId)
      // the proof the worker has run the job and found nothing: an attempt is recorded
      const observer = new Queue(DELIVERY_QUEUE_NAME, { connection: env.redis.redis, prefix: env.redis.prefix })
      const job = () => observer.getJob(deliveryJobId(notificationId))
      await until('a first attempt of the job', async () => ((await job())?.attemptsMade ?? 0) >= 1)
      expect(await inboxCount()).toBe(before)
      // then the rows become visible
      const content = { appUrl, title: 'Late rows', message: 'm' }
      const hash = contentHash(content)
      await rawSql().begin(async (tx) => {
        await tx`insert into notifications (id, project_id, app_url, title, message, content_hash, recipient_count)
                 values (${notificationId}, ${projectId}, ${appUrl}, ${content.title}, ${content.message}, ${hash}, ${recipients.length})`
        await tx`insert into notification_deliveries (notification_id, wallet_address, content_hash)
                 select ${notificationId}, wallet, ${hash} from unnest(${recipients}::text[]) as wallet`
      })
      await until('the retried job', async () => (await inboxCount()) === before + 5, { timeoutMs: 30_000 })
      // enqueueing the same notification again is a no-op (deterministic job id) and delivers nothing more
      const finished = await until('the job to complete', async () => (await job())?.finishedOn)
      await queue.enqueue(notificationId)
      // nothing was queued again: the one job with that id is the finished one, and nothing waits
      expect((await job())?.finishedOn).toBe(finished)
      expect(await observer.getJobCounts('waiting', 'active', 'delayed', 'prioritized')).toEqual({ waiting: 0, active: 0, delayed: 0, prioritized: 0 })
      expect(await inboxCount()).toBe(before + 5)
      await observer.close()
    } finally {
      await queue.close()
      await worker.close()
    }
  })
})
