import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { Config } from '../../config/env.js'
import type { Database } from '../../db/client.js'
import { createCursorCodec } from '../../notifications/cursor.js'
import { createInbox } from '../../notifications/inbox.js'
import { createPins } from '../../notifications/pins.js'
import { errorBodySchema } from '../errors.js'
import { walletAddressSchema } from '../../contract/schemas.js'
import { requireBearerToken } from './admin.js'
import { cursorSchema, pageLimitSchema } from '../paging.js'
import { appUrlSchema } from './notifications/schemas.js'

const INBOX_PAGE_DEFAULT = 50
const INBOX_PAGE_MAX = 200

const booleanField = z.boolean({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be true or false') })

const pinBodySchema = z
  .object(
    {
      app_url: appUrlSchema,
      wallet_address: walletAddressSchema,
      pinned: booleanField,
      notifications_enabled: booleanField.default(false),
    },
    { error: 'must be a JSON object' },
  )
  .refine((body) => body.pinned || !body.notifications_enabled, {
    path: ['notifications_enabled'],
    message: 'can only be true while the app is pinned',
  })

const pinSchema = z
  .object({
    success: z.literal(true),
    appUrl: z.string(),
    walletAddress: z.string(),
    pinned: z.boolean(),
    notificationsEnabled: z.boolean(),
  })
  .meta({ id: 'Pin' })

const inboxSchema = z
  .object({
    success: z.literal(true),
    notifications: z.array(
      z.object({
        id: z.string().describe('Notification id'),
        appUrl: z.string(),
        title: z.string(),
        message: z.string(),
        targetPath: z.string().optional(),
        sentAt: z.string().describe('ISO 8601: when the app sent it'),
        deliveredAt: z.string().describe('ISO 8601: when it reached this inbox'),
      }),
    ),
    nextCursor: z.string().optional().describe('Absent on the last page'),
  })
  .meta({ id: 'Inbox' })

const errorResponses = { 400: errorBodySchema, 401: errorBodySchema, 503: errorBodySchema }

/** What the platform's client app calls (`Authorization: Bearer <PLATFORM_TOKEN>`): pins, preferences, inbox. */
export const platformRoutes: FastifyPluginAsyncZod<{ config: Config; db: Database }> = async (app, { config, db }) => {
  const pins = createPins({ db })
  const inbox = createInbox({ db })
  const cursors = createCursorCodec(config.CURSOR_SECRET)
  app.addHook('onRequest', requireBearerToken(config.PLATFORM_TOKEN, 'PLATFORM_TOKEN'))
  const common = { tags: ['platform'], security: [{ platformToken: [] }] }

  app.put(
    '/v1/platform/pins',
    {
      schema: {
        ...common,
        summary: "Record a wallet's pin of an app and its notification preference",
        description: 'Notifications can only be enabled while pinned; unpinning turns them off.',
        body: pinBodySchema,
        response: { 200: pinSchema, ...errorResponses },
      },
    },
    async (request) => {
      const body = request.body
      const pin = await pins.upsertPin({
        appUrl: body.app_url,
        walletAddress: body.wallet_address,
        pinned: body.pinned,
        notificationsEnabled: body.notifications_enabled,
      })
      return { success: true as const, ...pin }
    },
  )

  app.get(
    '/v1/platform/inbox',
    {
      schema: {
        ...common,
        summary: "A wallet's delivered notifications, newest first",
        description: 'Ordered by delivery (newest delivered first), keyset-paginated with an opaque cursor bound to the wallet.',
        querystring: z.object({
          wallet_address: walletAddressSchema,
          cursor: cursorSchema.optional(),
          limit: pageLimitSchema({ max: INBOX_PAGE_MAX, fallback: INBOX_PAGE_DEFAULT }),
        }),
        response: { 200: inboxSchema, ...errorResponses },
      },
    },
    async (request) => {
      const { wallet_address: wallet, cursor, limit } = request.query
      const scope = `inbox\0${wallet}`
      const beforePosition = cursor === undefined ? undefined : cursors.decode(scope, cursor)
      const page = await inbox.readInbox(wallet, { beforePosition, limit })
      const last = page.entries.at(-1)
      return {
        success: true as const,
        notifications: page.entries.map((entry) => ({
          id: entry.notificationId,
          appUrl: entry.appUrl,
          title: entry.title,
          message: entry.message,
          targetPath: entry.targetPath ?? undefined,
          sentAt: entry.sentAt.toISOString(),
          deliveredAt: entry.deliveredAt.toISOString(),
        })),
        nextCursor: page.hasMore && last ? cursors.encode(scope, last.position) : undefined,
      }
    },
  )
}
