import { and, asc, eq, gt, sql, type SQL } from 'drizzle-orm'
import type { Address } from 'viem'
import type { Database } from '../db/client.js'
import { notificationPins } from '../db/schema/index.js'

export type PinPreference = { appUrl: string; walletAddress: Address; pinned: boolean; notificationsEnabled: boolean }

export type PinStatus = { appPinned: boolean; notificationsEnabled: boolean }

/** A wallet's status from its pin row, if any: no row means never pinned, and only a pinned app notifies. */
export function pinStatusOf(row: { pinned: boolean | null; notificationsEnabled: boolean | null } | undefined): PinStatus {
  const appPinned = row?.pinned ?? false
  return { appPinned, notificationsEnabled: appPinned && (row?.notificationsEnabled ?? false) }
}

export type PinnedUser = { position: number; address: Address; notificationsEnabled: boolean }

/**
 * Wallets' pins of apps and their notification preferences. Addresses are
 * EIP-55 and app URLs normalized by the caller.
 */
export function createPins({ db }: { db: Database }) {
  /**
   * Records a pin and preference. Unpinning clears the preference:
   * notifications are only ever enabled on a pinned app.
   *
   * Writes for one app are serialized by a transaction-scoped advisory lock
   * so a new row's identity `id` is drawn and committed in the same order as
   * other rows of that app. Keyset pagination relies on it: a row committed
   * with an id below a cursor a reader already holds would be skipped.
   */
  async function upsertPin(input: PinPreference): Promise<PinPreference> {
    const notificationsEnabled = input.pinned && input.notificationsEnabled
    return db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`notification_pins:${input.appUrl}`}, 0))`)
      const [row] = await tx
        .insert(notificationPins)
        .values({ appUrl: input.appUrl, walletAddress: input.walletAddress, pinned: input.pinned, notificationsEnabled })
        .onConflictDoUpdate({
          target: [notificationPins.appUrl, notificationPins.walletAddress],
          set: { pinned: input.pinned, notificationsEnabled, updatedAt: sql`now()` },
        })
        .returning({ pinned: notificationPins.pinned, notificationsEnabled: notificationPins.notificationsEnabled })
      return { appUrl: input.appUrl, walletAddress: input.walletAddress, ...row! }
    })
  }

  /**
   * One page of the wallets that pinned `appUrl`, in pin-row order, starting
   * after `afterPosition`. Fetches one row more than `limit` to know whether
   * another page follows without a count query.
   */
  async function listPinnedUsers(
    appUrl: string,
    options: { enabledOnly: boolean; afterPosition?: number; limit: number },
  ): Promise<{ users: PinnedUser[]; hasMore: boolean }> {
    // predicates spelled like the partial indexes' so the planner can use them
    const visible: SQL = options.enabledOnly
      ? sql`${notificationPins.pinned} and ${notificationPins.notificationsEnabled}`
      : sql`${notificationPins.pinned}`
    const rows = await db
      .select({
        position: notificationPins.id,
        address: notificationPins.walletAddress,
        notificationsEnabled: notificationPins.notificationsEnabled,
      })
      .from(notificationPins)
      .where(
        and(
          eq(notificationPins.appUrl, appUrl),
          visible,
          options.afterPosition === undefined ? undefined : gt(notificationPins.id, options.afterPosition),
        ),
      )
      .orderBy(asc(notificationPins.id))
      .limit(options.limit + 1)
    const users = rows.slice(0, options.limit).map((row) => ({ ...row, address: row.address as Address }))
    return { users, hasMore: rows.length > options.limit }
  }

  /** Pins of many wallets for one app, in one query. Wallets without a row are absent. */
  async function findPreferences(appUrl: string, wallets: readonly Address[]): Promise<Map<Address, PinStatus>> {
    if (wallets.length === 0) return new Map()
    const rows = await db
      .select({
        walletAddress: notificationPins.walletAddress,
        pinned: notificationPins.pinned,
        notificationsEnabled: notificationPins.notificationsEnabled,
      })
      .from(notificationPins)
      .where(
        and(
          eq(notificationPins.appUrl, appUrl),
          sql`${notificationPins.walletAddress} = any(${sql.param([...wallets])}::text[])`,
        ),
      )
    return new Map(
      rows.map((row) => [
        row.walletAddress as Address,
        { appPinned: row.pinned, notificationsEnabled: row.pinned && row.notificationsEnabled },
      ]),
    )
  }

  return { upsertPin, listPinnedUsers, findPreferences }
}

export type Pins = ReturnType<typeof createPins>
