import { z } from 'zod'
import type { AppAccessControl } from '../../../notifications/access.js'
import { walletAddressSchema } from '../../../contract/schemas.js'
import { errorBodySchema } from '../../errors.js'
import { appErrorResponses, appUrlSchema } from './schemas.js'
import type { ApiKeyGate, AppRoutes } from './api-key.js'

const statusResponseSchema = z
  .object({
    success: z.literal(true),
    appPinned: z.boolean(),
    notificationsEnabled: z.boolean().describe('Always false when appPinned is false'),
  })
  .meta({ id: 'AppUserStatus' })

/** POST /v1/notifications/app/user/status: one wallet's pin and preference for an app. */
export function userStatusRoute(app: AppRoutes, deps: { keys: ApiKeyGate; access: AppAccessControl }) {
  const { keys, access } = deps
  app.post(
    '/v1/notifications/app/user/status',
    {
      // the contract calls any store failure here, key lookup included, a 500 "status lookup failed"
      config: { failure: 'preferences_unavailable' },
      preValidation: keys.require,
      schema: {
        tags: ['notifications'],
        summary: "A wallet's pin and notification preference for an app",
        description: '500 `preferences_unavailable` when the preferences store cannot answer.',
        security: [{ apiKey: [] }],
        body: z.object({ app_url: appUrlSchema, wallet_address: walletAddressSchema }, { error: 'must be a JSON object' }),
        response: { 200: statusResponseSchema, ...appErrorResponses, 500: errorBodySchema },
      },
    },
    async (request) => {
      const { app_url: appUrl, wallet_address: walletAddress } = request.body
      return { success: true as const, ...(await access.authorizedPinStatus(keys.projectOf(request), appUrl, walletAddress)) }
    },
  )
}
