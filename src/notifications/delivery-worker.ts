import { Worker } from 'bullmq'
import { eq, sql, type SQL } from 'drizzle-orm'
import type { Config } from '../config/env.js'
import type { Database } from '../db/client.js'
import { notifications } from '../db/schema/index.js'
import type { Logger } from '../logger.js'
import { createRedis } from '../redis/client.js'
import { DELIVERY_QUEUE_NAME, type DeliveryJob } from './delivery-queue.js'

/**
 * Transaction-scoped advisory lock on one notification. The send
 * transaction holds it exclusively from before the enqueue until it commits
 * or rolls back (the job is enqueued inside that transaction so that a
 * failed enqueue rolls the send back); the worker takes it shared, so a job
 * picked up at once waits for the commit instead of finding no rows.
 */
export function notificationLockKey(notificationId: string): SQL {
  return sql`hashtextextended(${`notification_delivery:${notificationId}`}, 0)`
}

/**
 * The notification of a job is not in Postgres: its send rolled back after
 * the enqueue (then retries find nothing and the job fails, having
 * delivered nothing), or it was written without the lock above. Throwing
 * makes BullMQ retry with backoff.
 */
export class NotificationNotVisibleError extends Error {
  override name = 'NotificationNotVisibleError'
  constructor(notificationId: string) {
    super(`notification ${notificationId} is not committed (yet)`)
  }
}

/**
 * Writes the inbox entries of every still-queued delivery of a notification
 * and marks those deliveries delivered, in one statement, so a crash leaves
 * either all or none of it. Running it again (a retried or stalled job)
 * finds nothing queued; the unique (notification, wallet) inbox key with
 * ON CONFLICT DO NOTHING backs that up.
 */
export async function deliverNotification(db: Database, notificationId: string): Promise<{ delivered: number }> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock_shared(${notificationLockKey(notificationId)})`)
    const [exists] = await tx.select({ id: notifications.id }).from(notifications).where(eq(notifications.id, notificationId))
    if (!exists) throw new NotificationNotVisibleError(notificationId)
    const inserted = await tx.execute<{ wallet_address: string }>(sql`
      with delivered as (
        update notification_deliveries
           set status = 'delivered', delivered_at = now()
         where notification_id = ${notificationId} and status = 'queued'
        returning wallet_address
      )
      insert into notification_inbox (wallet_address, notification_id)
      select wallet_address, ${notificationId}::uuid from delivered
      on conflict (notification_id, wallet_address) do nothing
      returning wallet_address
    `)
    return { delivered: inserted.length }
  })
}

export type DeliveryWorkerOptions = {
  db: Database
  redisUrl: string
  prefix: string
  logger: Logger
  concurrency?: number
  /** How often the safety net looks for deliveries left queued. */
  sweepIntervalMs?: number
  /** A delivery still queued this long after its send has lost its job. */
  staleAfterMs?: number
}

/**
 * Notifications with deliveries still queued `staleAfterMs` after their
 * send. Their job is gone — it used up its retries during an outage, or
 * Redis lost it — and the send was answered as sent, so they are delivered
 * here directly. Safe alongside the job and other workers' sweeps:
 * deliverNotification only ever moves queued deliveries, under row locks.
 */
export async function deliverStaleNotifications(db: Database, staleAfterMs: number, limit = 100): Promise<{ notifications: number; delivered: number }> {
  const stale = await db.execute<{ notification_id: string }>(sql`
    select distinct notification_id from notification_deliveries
    where status = 'queued' and created_at < now() - make_interval(secs => ${staleAfterMs / 1000})
    limit ${limit}
  `)
  let delivered = 0
  for (const row of stale) delivered += (await deliverNotification(db, row.notification_id)).delivered
  return { notifications: stale.length, delivered }
}

/** The consumer side of the delivery queue. */
export function createDeliveryWorker(options: DeliveryWorkerOptions) {
  const logger = options.logger.child({ component: 'notification-delivery' })
  const connection = createRedis(options.redisUrl, 'queue')
  const worker = new Worker<DeliveryJob>(
    DELIVERY_QUEUE_NAME,
    async (job) => {
      const { delivered } = await deliverNotification(options.db, job.data.notificationId)
      logger.debug({ notification_id: job.data.notificationId, delivered }, 'notification delivered')
      return { delivered }
    },
    { connection, prefix: options.prefix, concurrency: options.concurrency ?? 4 },
  )
  worker.on('failed', (job, error) => {
    const final = job ? job.attemptsMade >= (job.opts.attempts ?? 1) : true
    logger[final ? 'error' : 'debug'](
      { err: error, notification_id: job?.data.notificationId, attempts: job?.attemptsMade },
      final ? 'notification delivery failed for good' : 'notification delivery will be retried',
    )
  })
  worker.on('error', (error) => logger.warn({ err: error }, 'delivery worker error'))

  const staleAfterMs = options.staleAfterMs ?? 60_000
  const sweep = setInterval(() => {
    deliverStaleNotifications(options.db, staleAfterMs)
      .then(({ notifications, delivered }) => {
        if (notifications > 0) logger.warn({ notifications, delivered }, 'delivered notifications whose delivery job was lost')
      })
      .catch((error) => logger.debug({ err: error }, 'delivery sweep could not run; next time'))
  }, options.sweepIntervalMs ?? 30_000)
  sweep.unref()

  async function close(): Promise<void> {
    clearInterval(sweep)
    await worker.close()
    await connection.quit().catch(() => connection.disconnect())
  }

  return { worker, close }
}

/**
 * Starts the delivery worker for the `worker` role and returns its closer,
 * in the shape src/bin/roles.ts keeps for shutdown.
 */
export function startNotificationWorker(deps: { config: Config; db: Database; logger: Logger }) {
  const worker = createDeliveryWorker({
    db: deps.db,
    redisUrl: deps.config.REDIS_URL,
    prefix: deps.config.QUEUE_PREFIX,
    logger: deps.logger,
    concurrency: deps.config.WORKER_CONCURRENCY,
  })
  deps.logger.info('notification delivery worker started')
  return { name: 'notification-worker', close: () => worker.close() }
}
