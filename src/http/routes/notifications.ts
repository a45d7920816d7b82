import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { Config } from '../../config/env.js'
import type { Database } from '../../db/client.js'
import type { Redis } from '../../redis/client.js'
import { createAppAccess, type KeyProject } from '../../notifications/access.js'
import { InvalidAppUrlError, MAX_APP_URL_LENGTH, normalizeAppUrl } from '../../notifications/app-url.js'
import { createCursorCodec } from '../../notifications/cursor.js'
import { createDeliveryQueue, type DeliveryQueue } from '../../notifications/delivery-queue.js'
import {
  ApiKeyNotFoundError,
  ApiKeyRejectedError,
  AppNotInProjectError,
  AppUrlTakenError,
  DeliveryQueueUnavailableError,
  InvalidCursorError,
  KeyProjectDeletedError,
  NotificationDomainError,
  PreferencesUnavailableError,
  ProjectNotFoundError,
  ProjectNotWhitelistedError,
} from '../../notifications/errors.js'
import { createPins } from '../../notifications/pins.js'
import { createRateLimiter, type RateLimitDecision } from '../../notifications/rate-limit.js'
import {
  createSender,
  FAILURE_DISABLED,
  FAILURE_NOT_PINNED,
  MAX_MESSAGE_LENGTH,
  MAX_RECIPIENTS,
  MAX_TARGET_PATH_LENGTH,
  MAX_TITLE_LENGTH,
} from '../../notifications/send.js'
import { checkVisibleLength, textLengthMessage } from '../../notifications/text-length.js'
import { normalizeIP } from '@fastify/rate-limit'
import { errorBodySchema, errorHandler, HttpError } from '../errors.js'
import { checksumAddresses, walletAddressFormatSchema, walletAddressSchema } from '../../contract/schemas.js'

// ---------------------------------------------------------------------------
// Schemas shared by the notification, admin and platform route groups
// ---------------------------------------------------------------------------

const requiredString = (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be a string')

/** An app URL in, its normalized form out (see normalizeAppUrl). */
export const appUrlSchema = z
  .string({ error: requiredString })
  .max(MAX_APP_URL_LENGTH, `must be at most ${MAX_APP_URL_LENGTH} characters`)
  .transform((value, context) => {
    try {
      return normalizeAppUrl(value)
    } catch (error) {
      if (!(error instanceof InvalidAppUrlError)) throw error
      context.addIssue({ code: 'custom', message: error.message })
      return z.NEVER
    }
  })
  .describe('App URL; normalized to scheme + lowercase host + path without trailing slash')

/** `limit` query parameter: a positive integer, `fallback` when absent, silently capped at `max`. */
export function pageLimitSchema(fallback: number, max: number) {
  return z.coerce
    .number({ error: 'must be a positive integer' })
    .int('must be a positive integer')
    .positive('must be a positive integer')
    .transform((value) => Math.min(value, max))
    .default(fallback)
    .describe(`Page size, default ${fallback}, capped at ${max}`)
}

/**
 * Refinement: at most `max` characters as users count them, checked at a
 * cost bounded by `max` (see checkVisibleLength for the caps it adds).
 */
function visibleLengthAtMost(max: number) {
  return (value: string, context: z.core.$RefinementCtx<string>) => {
    const verdict = checkVisibleLength(value, max)
    if (!verdict.ok) context.addIssue({ code: 'custom', message: textLengthMessage(verdict.reason, max), input: value })
  }
}

/** Text whose length is counted as users see it (grapheme clusters), 1..max. */
function visibleTextSchema(max: number) {
  return z
    .string({ error: requiredString })
    .refine((value) => value.trim().length > 0, 'must not be empty')
    .superRefine(visibleLengthAtMost(max))
}

const targetPathSchema = z
  .string({ error: 'must be a string' })
  .startsWith('/', 'must start with /')
  // `//host` and `/\host` leave the app in a browser: a target path stays on the app
  .refine((value) => !/^\/[/\\]/.test(value), 'must be a path on the app, not //host')
  .superRefine(visibleLengthAtMost(MAX_TARGET_PATH_LENGTH))

const booleanQuerySchema = z.enum(['true', 'false'], { error: 'must be true or false' }).transform((value) => value === 'true')

const cursorSchema = z.string().max(200, 'is not a cursor issued for this listing').describe('Opaque cursor from a previous page')

// ---------------------------------------------------------------------------
// Domain errors → HTTP, in one place
// ---------------------------------------------------------------------------

/** The HTTP rendering of a notification domain error, or undefined for anything else. */
export function httpErrorFor(error: unknown): HttpError | undefined {
  if (error instanceof InvalidAppUrlError) return new HttpError(400, 'invalid_request', `app_url: ${error.message}`, 'app_url')
  if (!(error instanceof NotificationDomainError)) return undefined
  if (error instanceof ApiKeyRejectedError) return new HttpError(401, error.code, error.message)
  if (error instanceof KeyProjectDeletedError) return new HttpError(404, error.code, error.message)
  if (error instanceof AppNotInProjectError || error instanceof ProjectNotWhitelistedError) {
    return new HttpError(403, error.code, error.message)
  }
  if (error instanceof InvalidCursorError) return new HttpError(400, error.code, error.message, 'cursor')
  if (error instanceof AppUrlTakenError) return new HttpError(409, error.code, error.message, 'app_url')
  if (error instanceof PreferencesUnavailableError) return new HttpError(500, error.code, error.message)
  if (error instanceof DeliveryQueueUnavailableError) {
    return new HttpError(503, error.code, error.message, undefined, { 'retry-after': '5' })
  }
  if (error instanceof ProjectNotFoundError || error instanceof ApiKeyNotFoundError) {
    return new HttpError(404, error.code, error.message)
  }
  return undefined
}

/** Error handler for the notification route groups: maps domain errors, then renders like every other error. */
export function notificationErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const mapped = httpErrorFor(error)
  // the shared handler logs 5xx HttpErrors; the cause says what actually failed
  if (mapped) mapped.cause = error
  return errorHandler((mapped as FastifyError | undefined) ?? error, request, reply)
}

// ---------------------------------------------------------------------------
// Response schemas
// ---------------------------------------------------------------------------

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

const statusResponseSchema = z
  .object({
    success: z.literal(true),
    appPinned: z.boolean(),
    notificationsEnabled: z.boolean().describe('Always false when appPinned is false'),
  })
  .meta({ id: 'AppUserStatus' })

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

const errorResponses = {
  400: errorBodySchema,
  401: errorBodySchema,
  403: errorBodySchema,
  404: errorBodySchema,
  429: errorBodySchema,
}

// ---------------------------------------------------------------------------
// Plugin
// ---------------------------------------------------------------------------

export type NotificationRoutesOptions = {
  config: Config
  db: Database
  /** Fail-fast request connection; holds the rate-limit counters. */
  redis: Redis
  /** Created from config (and closed with the server) when not given. */
  deliveryQueue?: DeliveryQueue
}

const USERS_PAGE_DEFAULT = 100
const USERS_PAGE_MAX = 500

/** Sets the rate-limit headers every response of the notification endpoints carries. */
function rateLimitHeaders(reply: FastifyReply, decision: RateLimitDecision) {
  if (!decision.counted) return
  reply.header('x-ratelimit-limit', decision.limit)
  reply.header('x-ratelimit-remaining', decision.remaining)
  reply.header('x-ratelimit-reset', Math.max(1, Math.ceil(decision.resetMs / 1000)))
}

/** The app-facing notification API (header `x-api-key`). */
export const notificationRoutes: FastifyPluginAsyncZod<NotificationRoutesOptions> = async (app, options) => {
  const { config, db } = options
  const access = createAppAccess({ db })
  const pins = createPins({ db })
  const cursors = createCursorCodec(config.CURSOR_SECRET)
  const deliveryQueue =
    options.deliveryQueue ?? createDeliveryQueue({ redisUrl: config.REDIS_URL, prefix: config.QUEUE_PREFIX })
  if (!options.deliveryQueue) app.addHook('onClose', () => deliveryQueue.close())
  const sender = createSender({ db, pins, queue: deliveryQueue })
  const limiter = createRateLimiter({
    redis: options.redis,
    prefix: config.QUEUE_PREFIX,
    // one counter for the three endpoints
    name: 'notifications-rate',
    max: config.RATE_LIMIT_MAX,
    windowMs: config.RATE_LIMIT_WINDOW_MS,
    logger: app.log,
  })
  const keyProjects = new WeakMap<FastifyRequest, KeyProject>()

  app.setErrorHandler(notificationErrorHandler)

  // before authentication and validation: failed and malformed attempts count too
  app.addHook('onRequest', async (request, reply) => {
    // request.ip follows TRUST_PROXY: the socket address unless a trusted proxy is configured.
    // IPv6 clients are counted per /64, the block one subscriber holds, so rotating addresses inside it gains nothing.
    const decision = await limiter.hit(normalizeIP(request.ip, 64))
    rateLimitHeaders(reply, decision)
    if (!decision.allowed) {
      const retryAfter = String(Math.max(1, Math.ceil(decision.resetMs / 1000)))
      throw new HttpError(
        429,
        'rate_limited',
        `more than ${decision.limit} requests in ${config.RATE_LIMIT_WINDOW_MS / 1000} s from this client; retry in ${retryAfter} s`,
        undefined,
        { 'retry-after': retryAfter },
      )
    }
  })

  /**
   * Resolves the key (401/404) before the body is validated. For the status
   * endpoint the contract calls any store failure a 500 "status lookup
   * failed", key lookup included.
   */
  function requireApiKey(behaviour: { outageIsStatusLookupFailure?: boolean } = {}) {
    return async (request: FastifyRequest) => {
      try {
        keyProjects.set(request, await access.resolveKey(request.headers['x-api-key']))
      } catch (error) {
        if (behaviour.outageIsStatusLookupFailure && !(error instanceof NotificationDomainError)) {
          throw new PreferencesUnavailableError(error)
        }
        throw error
      }
    }
  }

  function keyProjectOf(request: FastifyRequest): KeyProject {
    const project = keyProjects.get(request)
    if (!project) throw new Error('API key hook did not run for this route')
    return project
  }

  app.get(
    '/v1/notifications/app/users',
    {
      preValidation: requireApiKey(),
      schema: {
        tags: ['notifications'],
        summary: 'List the wallets that pinned an app',
        description:
          'Keyset-paginated in pin order: users pinning the app while you page appear on later pages; none is skipped or repeated. ' +
          '`notification_enabled=true` lists only wallets with notifications enabled.',
        security: [{ apiKey: [] }],
        querystring: z.object({
          app_url: appUrlSchema,
          notification_enabled: booleanQuerySchema.optional(),
          cursor: cursorSchema.optional(),
          limit: pageLimitSchema(USERS_PAGE_DEFAULT, USERS_PAGE_MAX),
        }),
        response: { 200: usersResponseSchema, ...errorResponses },
      },
    },
    async (request) => {
      const query = request.query
      const { appUrl } = await access.authorizeApp(keyProjectOf(request), query.app_url)
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

  app.post(
    '/v1/notifications/app/user/status',
    {
      preValidation: requireApiKey({ outageIsStatusLookupFailure: true }),
      schema: {
        tags: ['notifications'],
        summary: "A wallet's pin and notification preference for an app",
        description: '500 `preferences_unavailable` when the preferences store cannot answer.',
        security: [{ apiKey: [] }],
        body: z.object(
          { app_url: appUrlSchema, wallet_address: walletAddressSchema },
          { error: 'must be a JSON object' },
        ),
        response: { 200: statusResponseSchema, ...errorResponses, 500: errorBodySchema },
      },
    },
    async (request) => {
      const { app_url: rawAppUrl, wallet_address: walletAddress } = request.body
      try {
        return { success: true as const, ...(await access.authorizedPinStatus(keyProjectOf(request), rawAppUrl, walletAddress)) }
      } catch (error) {
        if (error instanceof NotificationDomainError) throw error
        throw new PreferencesUnavailableError(error)
      }
    },
  )

  app.post(
    '/v1/notifications/send',
    {
      // 1,000 addresses and texts: the one route that keeps the whole BODY_LIMIT (the others take 16 KiB)
      bodyLimit: config.BODY_LIMIT,
      preValidation: requireApiKey(),
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
            target_path: targetPathSchema.optional(),
          },
          { error: 'must be a JSON object' },
        ),
        response: { 200: sendResponseSchema, ...errorResponses, 503: errorBodySchema },
      },
    },
    async (request) => {
      const body = request.body
      const appAccess = await access.authorizeApp(keyProjectOf(request), body.app_url)
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
