import { and, desc, eq, lt } from 'drizzle-orm'
import type { Address } from 'viem'
import type { Database } from '../db/client.js'
import { notificationInbox, notifications } from '../db/schema/index.js'

export type InboxEntry = {
  position: number
  notificationId: string
  appUrl: string
  title: string
  message: string
  targetPath: string | null
  sentAt: Date
  deliveredAt: Date
}

/** A wallet's delivered notifications, as the platform's client app shows them. */
export function createInbox({ db }: { db: Database }) {
  /** One page, newest first, of the entries older than `beforePosition`. */
  async function readInbox(
    walletAddress: Address,
    options: { beforePosition?: number; limit: number },
  ): Promise<{ entries: InboxEntry[]; hasMore: boolean }> {
    const rows = await db
      .select({
        position: notificationInbox.id,
        notificationId: notificationInbox.notificationId,
        appUrl: notifications.appUrl,
        title: notifications.title,
        message: notifications.message,
        targetPath: notifications.targetPath,
        sentAt: notifications.createdAt,
        deliveredAt: notificationInbox.deliveredAt,
      })
      .from(notificationInbox)
      .innerJoin(notifications, eq(notifications.id, notificationInbox.notificationId))
      .where(
        and(
          eq(notificationInbox.walletAddress, walletAddress),
          options.beforePosition === undefined ? undefined : lt(notificationInbox.id, options.beforePosition),
        ),
      )
      .orderBy(desc(notificationInbox.id))
      .limit(options.limit + 1)
    return { entries: rows.slice(0, options.limit), hasMore: rows.length > options.limit }
  }

  return { readInbox }
}

export type Inbox = ReturnType<typeof createInbox>
