import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core'

/**
 * Developer-dashboard projects. Deletion is soft (`deleted_at`) so that API
 * keys of a deleted project still resolve and callers get "project gone"
 * (404) rather than "unknown key" (401).
 */
export const notificationProjects = pgTable('notification_projects', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: text('name').notNull(),
  /** Only whitelisted projects may list users, read status and send. */
  whitelisted: boolean('whitelisted').notNull().default(false),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  deletedAt: timestamp('deleted_at', { withTimezone: true }),
})

/** API keys, stored as the SHA-256 of the key only: the key itself is shown once and never stored. */
export const notificationApiKeys = pgTable('notification_api_keys', {
  id: uuid('id').primaryKey().defaultRandom(),
  projectId: uuid('project_id')
    .notNull()
    .references(() => notificationProjects.id),
  /** Hex SHA-256 of the key; lookups go through this unique index. */
  keyHash: text('key_hash').notNull().unique(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  revokedAt: timestamp('revoked_at', { withTimezone: true }),
})

/** Normalized app URLs; the primary key makes one URL belong to one project. */
export const notificationApps = pgTable(
  'notification_apps',
  {
    appUrl: text('app_url').primaryKey(),
    projectId: uuid('project_id')
      .notNull()
      .references(() => notificationProjects.id),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('notification_apps_project_idx').on(t.projectId)],
)

/**
 * A wallet's pin of an app and its notification preference, written by the
 * platform's client app. Keyed by app URL, not by project: users pin apps
 * whether or not a project manages them. Unpinning keeps the row (with
 * `pinned = false`) so a wallet keeps its `id`, the keyset-pagination order.
 */
export const notificationPins = pgTable(
  'notification_pins',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    appUrl: text('app_url').notNull(),
    /** EIP-55 checksummed address. */
    walletAddress: text('wallet_address').notNull(),
    pinned: boolean('pinned').notNull(),
    notificationsEnabled: boolean('notifications_enabled').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('notification_pins_app_wallet_idx').on(t.appUrl, t.walletAddress),
    index('notification_pins_listing_idx').on(t.appUrl, t.id).where(sql`${t.pinned}`),
    index('notification_pins_enabled_listing_idx')
      .on(t.appUrl, t.id)
      .where(sql`${t.pinned} and ${t.notificationsEnabled}`),
    check('notification_pins_enabled_only_when_pinned', sql`${t.pinned} or not ${t.notificationsEnabled}`),
  ],
)

/** One send request's content, recorded only when at least one wallet gets it. */
export const notifications = pgTable(
  'notifications',
  {
    id: uuid('id').primaryKey(),
    projectId: uuid('project_id')
      .notNull()
      .references(() => notificationProjects.id),
    appUrl: text('app_url').notNull(),
    title: text('title').notNull(),
    message: text('message').notNull(),
    targetPath: text('target_path'),
    /** SHA-256 of (app URL, title, message, target path): what "identical notification" means. */
    contentHash: text('content_hash').notNull(),
    recipientCount: integer('recipient_count').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('notifications_app_idx').on(t.appUrl, t.createdAt)],
)

/** One row per (notification, wallet): queued when sent, delivered once the worker wrote the inbox entry. */
export const notificationDeliveries = pgTable(
  'notification_deliveries',
  {
    notificationId: uuid('notification_id')
      .notNull()
      .references(() => notifications.id, { onDelete: 'cascade' }),
    walletAddress: text('wallet_address').notNull(),
    /** Copy of the notification's content hash so the 24 h duplicate check is one index scan. */
    contentHash: text('content_hash').notNull(),
    status: text('status', { enum: ['queued', 'delivered'] }).notNull().default('queued'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    deliveredAt: timestamp('delivered_at', { withTimezone: true }),
  },
  (t) => [
    primaryKey({ columns: [t.notificationId, t.walletAddress] }),
    index('notification_deliveries_duplicate_idx').on(t.contentHash, t.walletAddress, t.createdAt),
    // the delivery sweep looks for deliveries left queued
    index('notification_deliveries_queued_idx').on(t.createdAt).where(sql`${t.status} = 'queued'`),
  ],
)

/** The wallet's in-app inbox, read by the client app newest first (by `id`). */
export const notificationInbox = pgTable(
  'notification_inbox',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    walletAddress: text('wallet_address').notNull(),
    notificationId: uuid('notification_id')
      .notNull()
      .references(() => notifications.id, { onDelete: 'cascade' }),
    deliveredAt: timestamp('delivered_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // a retried delivery job inserts with ON CONFLICT DO NOTHING against this key
    uniqueIndex('notification_inbox_once_idx').on(t.notificationId, t.walletAddress),
    index('notification_inbox_wallet_idx').on(t.walletAddress, t.id),
  ],
)
