import { Queue } from 'bullmq'
import { createRedis, type Redis } from '../redis/client.js'
import { DeliveryQueueUnavailableError } from './errors.js'

export const DELIVERY_QUEUE_NAME = 'notification-delivery'

/** One job per notification (up to 1,000 wallets), never one per wallet. */
export type DeliveryJob = { notificationId: string }

/** Deterministic, so enqueueing the same notification twice is a no-op in BullMQ. */
export const deliveryJobId = (notificationId: string) => `notification-${notificationId}`

/**
 * Retries cover a worker that picks the job up before the send transaction
 * committed (it retries until the rows are visible) and transient Postgres
 * failures; ~1 minute in total.
 */
export const deliveryJobOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 250 },
  removeOnComplete: { age: 3_600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3_600 },
} as const

export type DeliveryQueue = {
  /** Throws DeliveryQueueUnavailableError when Redis is not connected (waiting briefly only for the very first connection). */
  assertReachable(): Promise<void>
  /** Hands a recorded notification to the delivery workers; throws DeliveryQueueUnavailableError fast when Redis cannot take it. */
  enqueue(notificationId: string): Promise<void>
  close(): Promise<void>
}

export type DeliveryQueueOptions = {
  redisUrl: string
  /** BullMQ key prefix (QUEUE_PREFIX). */
  prefix: string
  /** Longest wait for Redis to accept the job before the send is rolled back. */
  enqueueTimeoutMs?: number
}

/**
 * The producer side of the delivery queue, for the API. Its connection has
 * no offline queue: while Redis is down an enqueue fails at once instead of
 * waiting for a reconnect, so the send request can roll back and answer 503.
 */
export function createDeliveryQueue(options: DeliveryQueueOptions): DeliveryQueue {
  const enqueueTimeoutMs = options.enqueueTimeoutMs ?? 2_000
  // the producer never blocks, so a command timeout is safe here (unlike on a worker connection)
  const connection: Redis = createRedis(options.redisUrl, 'queue', {
    enableOfflineQueue: false,
    commandTimeout: enqueueTimeoutMs,
  })
  const queue = new Queue<DeliveryJob>(DELIVERY_QUEUE_NAME, {
    connection,
    prefix: options.prefix,
    defaultJobOptions: deliveryJobOptions,
  })
  // connection errors surface as failed enqueues; without a listener they would crash the process
  queue.on('error', () => {})

  let everReady = false
  connection.once('ready', () => {
    everReady = true
  })

  /**
   * Before the first connection (a process just started) a send may wait for
   * it; afterwards a connection that is not ready means Redis is down or
   * reconnecting, and the send is refused at once.
   */
  async function ensureConnected(): Promise<void> {
    if (connection.status === 'ready') return
    if (everReady) throw new DeliveryQueueUnavailableError(`redis connection is ${connection.status}`)
    let timer: NodeJS.Timeout | undefined
    let onReady: (() => void) | undefined
    try {
      await new Promise<void>((resolve, reject) => {
        onReady = resolve
        connection.once('ready', onReady)
        timer = setTimeout(() => reject(new DeliveryQueueUnavailableError('redis did not connect in time')), enqueueTimeoutMs)
      })
    } finally {
      clearTimeout(timer)
      if (onReady) connection.off('ready', onReady)
    }
  }

  async function enqueue(notificationId: string): Promise<void> {
    await ensureConnected()
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DeliveryQueueUnavailableError('enqueue timed out')), enqueueTimeoutMs)
    })
    try {
      await Promise.race([
        queue.add('deliver', { notificationId }, { jobId: deliveryJobId(notificationId) }),
        timeout,
      ])
    } catch (error) {
      if (error instanceof DeliveryQueueUnavailableError) throw error
      throw new DeliveryQueueUnavailableError(error instanceof Error ? error.message : String(error))
    } finally {
      clearTimeout(timer)
    }
  }

  async function close(): Promise<void> {
    if (connection.status === 'ready') {
      await queue.close().catch(() => {})
      await connection.quit().catch(() => connection.disconnect())
      return
    }
    // disconnect first: a queue that never reached Redis would otherwise wait for it forever
    connection.disconnect()
    await queue.close().catch(() => {})
  }

  return { assertReachable: ensureConnected, enqueue, close }
}
