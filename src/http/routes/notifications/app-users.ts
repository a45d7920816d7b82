import { z } from 'zod'
import type { CursorCodec } from '../../../notifications/cursor.js'
import type { Pins } from '../../../notifications/pins.js'
import type { AppAccessControl } from '../../../notifications/access.js'
import { cursorSchema, pageLimitSchema } from '../../paging.js'
import { appErrorResponses, appUrlSchema, booleanQuerySchema } from './schemas.js'
import type { ApiKeyGate, AppRoutes } from './api-key.js'

const USERS_PAGE_DEFAULT = 100
const USERS_PAGE_MAX = 500

const usersResponseSchema = z
  .object({
    success: z.literal(true),
    users: z.array(
      z.object({
        address: z.string().describe('EIP-55 wallet address'),
        notificationsEnabled: z.boolean(),
      }),
    ),
    nextCursor: z.string().optional().describe('Absent on the last page'),
  })
  .meta({ id: 'AppUsers' })

/** GET /v1/notifications/app/users: the wallets that pinned an app, a keyset page at a time. */
export function appUsersRoute(app: AppRoutes, deps: { keys: ApiKeyGate; access: AppAccessControl; pins: Pins; cursors: CursorCodec }) {
  const { keys, access, pins, cursors } = deps
  app.get(
    '/v1/notifications/app/users',
    {
      preValidation: keys.require,
      schema: {
        tags: ['notifications'],
        summary: 'List the wallets that pinned an app',
        description:
          'Keyset-paginated in pin order: users pinning the app while you page appear on later pages; none is skipped or repeated. ' +
          `\`notification_enabled=true\` lists only wallets with notifications enabled. \`limit\` above ${USERS_PAGE_MAX} is refused (400).`,
        security: [{ apiKey: [] }],
        querystring: z.object({
          app_url: appUrlSchema,
          notification_enabled: booleanQuerySchema.optional(),
          cursor: cursorSchema.optional(),
          limit: pageLimitSchema({ max: USERS_PAGE_MAX, fallback: USERS_PAGE_DEFAULT }),
        }),
        response: { 200: usersResponseSchema, ...appErrorResponses },
      },
    },
    async (request) => {
      const query = request.query
      const { appUrl } = await access.authorizeApp(keys.projectOf(request), query.app_url)
      const enabledOnly = query.notification_enabled ?? false
      const scope = `app-users\0${appUrl}\0${enabledOnly}`
      const afterPosition = query.cursor === undefined ? undefined : cursors.decode(scope, query.cursor)
      const page = await pins.listPinnedUsers(appUrl, { enabledOnly, afterPosition, limit: query.limit })
      const last = page.users.at(-1)
      return {
        success: true as const,
        users: page.users.map(({ address, notificationsEnabled }) => ({ address, notificationsEnabled })),
        nextCursor: page.hasMore && last ? cursors.encode(scope, last.position) : undefined,
      }
    },
  )
}
