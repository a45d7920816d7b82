import { randomUUID, createHash } from 'node:crypto'
import { and, eq, gt, sql } from 'drizzle-orm'
import type { Address } from 'viem'
import type { Database } from '../db/client.js'
import { notificationDeliveries, notifications } from '../db/schema/index.js'
import type { AppAccess } from './access.js'
import type { DeliveryQueue } from './delivery-queue.js'
import { notificationLockKey } from './delivery-worker.js'
import type { Pins } from './pins.js'

export const MAX_RECIPIENTS = 1_000
export const MAX_TITLE_LENGTH = 30
export const MAX_MESSAGE_LENGTH = 200
export const MAX_TARGET_PATH_LENGTH = 500

/** The contract's failure reasons, word for word. */
export const FAILURE_NOT_PINNED = 'user has not saved this app'
export const FAILURE_DISABLED = 'user has notifications disabled'
export type FailureReason = typeof FAILURE_NOT_PINNED | typeof FAILURE_DISABLED

export type SendInput = {
  access: AppAccess
  /** EIP-55, possibly repeated. */
  walletAddresses: readonly Address[]
  title: string
  message: string
  targetPath?: string
}

export type SendResult = { walletAddress: Address; sent: boolean; failureReason?: FailureReason }

export type SendOutcome = {
  success: boolean
  results: SendResult[]
  sentCount: number
  failedCount: number
}

/** What "identical notification" means: same app URL, title, message and target path. */
export function contentHash(input: { appUrl: string; title: string; message: string; targetPath?: string }): string {
  return createHash('sha256')
    .update(JSON.stringify([input.appUrl, input.title, input.message, input.targetPath ?? null]))
    .digest('hex')
}

/** First occurrence of each address, in request order; addresses are already EIP-55 so equal means equal. */
function uniqueInOrder(addresses: readonly Address[]): Address[] {
  return [...new Set(addresses)]
}

/**
 * Sends one notification to up to 1,000 wallets with a fixed number of
 * queries whatever the count: one pin lookup, then one transaction that
 * checks the 24 h duplicates, records the notification and its deliveries
 * and enqueues the delivery job. The enqueue is inside the transaction: if
 * the queue cannot take the job, nothing is recorded (no half-sent batch).
 */
export function createSender({ db, pins, queue }: { db: Database; pins: Pins; queue: DeliveryQueue }) {
  async function send(input: SendInput): Promise<SendOutcome> {
    const { appUrl, projectId } = input.access
    const recipients = uniqueInOrder(input.walletAddresses)
    const preferences = await pins.findPreferences(appUrl, recipients)

    const failures = new Map<Address, FailureReason>()
    const eligible: Address[] = []
    for (const wallet of recipients) {
      const preference = preferences.get(wallet)
      if (!preference?.appPinned) failures.set(wallet, FAILURE_NOT_PINNED)
      else if (!preference.notificationsEnabled) failures.set(wallet, FAILURE_DISABLED)
      else eligible.push(wallet)
    }

    if (eligible.length > 0) await recordAndEnqueue({ ...input, appUrl, projectId, eligible })

    const results: SendResult[] = recipients.map((walletAddress) => {
      const failureReason = failures.get(walletAddress)
      return failureReason ? { walletAddress, sent: false, failureReason } : { walletAddress, sent: true }
    })
    const failedCount = failures.size
    return { success: failedCount === 0, results, sentCount: results.length - failedCount, failedCount }
  }

  async function recordAndEnqueue(input: {
    appUrl: string
    projectId: string
    eligible: Address[]
    title: string
    message: string
    targetPath?: string
  }): Promise<void> {
    const hash = contentHash(input)
    // refuse before taking locks and a connection when Redis is known to be down
    await queue.assertReachable()
    await db.transaction(async (tx) => {
      // two identical sends at once must not both deliver: serialize per content
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`notification_content:${hash}`}, 0))`)
      const recent = await tx
        .select({ walletAddress: notificationDeliveries.walletAddress })
        .from(notificationDeliveries)
        .where(
          and(
            eq(notificationDeliveries.contentHash, hash),
            sql`${notificationDeliveries.walletAddress} = any(${sql.param(input.eligible)}::text[])`,
            gt(notificationDeliveries.createdAt, sql`now() - interval '24 hours'`),
          ),
        )
      const alreadyDelivered = new Set(recent.map((row) => row.walletAddress))
      // identical within 24 h: reported sent, not delivered again
      const fresh = input.eligible.filter((wallet) => !alreadyDelivered.has(wallet))
      if (fresh.length === 0) return

      const notificationId = randomUUID()
      // held until commit: a worker that picks the job up at once waits for these rows
      await tx.execute(sql`select pg_advisory_xact_lock(${notificationLockKey(notificationId)})`)
      await tx.insert(notifications).values({
        id: notificationId,
        projectId: input.projectId,
        appUrl: input.appUrl,
        title: input.title,
        message: input.message,
        targetPath: input.targetPath ?? null,
        contentHash: hash,
        recipientCount: fresh.length,
      })
      await tx.execute(sql`
        insert into notification_deliveries (notification_id, wallet_address, content_hash)
        select ${notificationId}::uuid, wallet, ${hash}
          from unnest(${sql.param(fresh)}::text[]) as wallet
      `)
      // throws DeliveryQueueUnavailableError, which rolls all of the above back
      await queue.enqueue(notificationId)
    })
  }

  return { send }
}

export type Sender = ReturnType<typeof createSender>
