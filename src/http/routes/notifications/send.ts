import { z } from 'zod'
import type { AppAccessControl } from '../../../notifications/access.js'
import {
  FAILURE_DISABLED,
  FAILURE_NOT_PINNED,
  MAX_MESSAGE_LENGTH,
  MAX_RECIPIENTS,
  MAX_TARGET_PATH_LENGTH,
  MAX_TITLE_LENGTH,
  type Sender,
} from '../../../notifications/send.js'
import { checksumAddresses, walletAddressFormatSchema } from '../../../contract/schemas.js'
import { errorBodySchema } from '../../errors.js'
import { appErrorResponses, appUrlSchema, targetPathSchema, visibleTextSchema } from './schemas.js'
import type { ApiKeyGate, AppRoutes } from './api-key.js'

const sendResponseSchema = z
  .object({
    success: z.boolean().describe('True only when every address was sent'),
    results: z.array(
      z.object({
        walletAddress: z.string(),
        sent: z.boolean(),
        failureReason: z.enum([FAILURE_NOT_PINNED, FAILURE_DISABLED]).optional(),
      }),
    ),
    sentCount: z.number().int(),
    failedCount: z.number().int(),
  })
  .meta({ id: 'SendResult' })

/** POST /v1/notifications/send: one notification to up to 1,000 wallets. */
export function sendRoute(app: AppRoutes, deps: { keys: ApiKeyGate; access: AppAccessControl; sender: Sender; bodyLimit: number }) {
  const { keys, access, sender } = deps
  app.post(
    '/v1/notifications/send',
    {
      // 1,000 addresses and texts: the one route that keeps the whole BODY_LIMIT (the others take 16 KiB)
      bodyLimit: deps.bodyLimit,
      preValidation: keys.require,
      schema: {
        tags: ['notifications'],
        summary: 'Send an in-app notification to up to 1,000 wallets',
        description:
          'Duplicate addresses (any letter case) count once. Wallets that did not pin the app or disabled notifications fail with a reason. ' +
          'An identical notification (app URL, wallet, title, message, target path) within 24 h is reported sent but not delivered again. ' +
          'Lengths count characters as users see them. 503 when the delivery queue is unreachable: nothing was recorded or sent.',
        security: [{ apiKey: [] }],
        body: z.object(
          {
            app_url: appUrlSchema,
            wallet_addresses: z
              // checksummed in the handler, in slices: 1,000 keccaks in one go would hold every other request
              .array(walletAddressFormatSchema, { error: 'must be an array of wallet addresses' })
              .min(1, 'must contain at least one address')
              .max(MAX_RECIPIENTS, `must contain at most ${MAX_RECIPIENTS} addresses`),
            title: visibleTextSchema(MAX_TITLE_LENGTH),
            message: visibleTextSchema(MAX_MESSAGE_LENGTH),
            target_path: targetPathSchema(MAX_TARGET_PATH_LENGTH).optional(),
          },
          { error: 'must be a JSON object' },
        ),
        response: { 200: sendResponseSchema, ...appErrorResponses, 503: errorBodySchema },
      },
    },
    async (request) => {
      const body = request.body
      const appAccess = await access.authorizeApp(keys.projectOf(request), body.app_url)
      return sender.send({
        access: appAccess,
        walletAddresses: await checksumAddresses(body.wallet_addresses),
        title: body.title,
        message: body.message,
        targetPath: body.target_path,
      })
    },
  )
}
