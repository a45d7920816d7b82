import { pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/** One builder code per wallet, forever: both columns are unique and rows are never updated. */
export const builderCodes = pgTable('builder_codes', {
  code: text('code').primaryKey(),
  /** EIP-55 checksummed address. */
  walletAddress: text('wallet_address').notNull().unique(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
})
