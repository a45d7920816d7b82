import type { FastifyReply } from 'fastify'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import type { Config } from '../../../config/env.js'
import type { Database } from '../../../db/client.js'
import type { Redis } from '../../../redis/client.js'
import { createRateLimiter, type RateLimitDecision } from '../../../redis/rate-limit.js'
import { createAppAccess } from '../../../notifications/access.js'
import { createCursorCodec } from '../../../notifications/cursor.js'
import { createDeliveryQueue, type DeliveryQueue } from '../../../notifications/delivery-queue.js'
import { createPins } from '../../../notifications/pins.js'
import { createSender } from '../../../notifications/send.js'
import { clientKey } from '../../client.js'
import { tooManyRequests, type RefusalCounter } from '../../refusals.js'
import { createApiKeyGate } from './api-key.js'
import { appUsersRoute } from './app-users.js'
import { sendRoute } from './send.js'
import { userStatusRoute } from './user-status.js'

export { appUrlSchema } from './schemas.js'

export type NotificationRoutesOptions = {
  config: Config
  db: Database
  /** Fail-fast request connection; holds the rate-limit counters. */
  redis: Redis
  refusals: RefusalCounter
  /** Created from config (and closed with the server) when not given. */
  deliveryQueue?: DeliveryQueue
}

/** Sets the rate-limit headers every response of the notification endpoints carries. */
function rateLimitHeaders(reply: FastifyReply, decision: RateLimitDecision) {
  if (!decision.counted) return
  reply.header('x-ratelimit-limit', decision.limit)
  reply.header('x-ratelimit-remaining', decision.remaining)
  reply.header('x-ratelimit-reset', Math.max(1, Math.ceil(decision.resetMs / 1000)))
}

/** The app-facing notification API (header `x-api-key`): one file per resource, wired here. */
export const notificationRoutes: FastifyPluginAsyncZod<NotificationRoutesOptions> = async (app, options) => {
  const { config, db } = options
  const access = createAppAccess({ db })
  const pins = createPins({ db })
  const cursors = createCursorCodec(config.CURSOR_SECRET)
  const deliveryQueue = options.deliveryQueue ?? createDeliveryQueue({ redisUrl: config.REDIS_URL, prefix: config.QUEUE_PREFIX })
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
    // a key-holding app during a Redis outage: the routes stay up (send answers 503 anyway, its queue is on that Redis)
    whenUnavailable: 'admit',
  })

  // before authentication and validation: failed and malformed attempts count too
  app.addHook('onRequest', async (request, reply) => {
    const decision = await limiter.hit(clientKey(request.ip))
    rateLimitHeaders(reply, decision)
    if (!decision.allowed) {
      options.refusals.refused('notifications_per_client')
      throw tooManyRequests(`more than ${decision.limit} requests in ${config.RATE_LIMIT_WINDOW_MS / 1000} s from this client`, decision.resetMs)
    }
  })

  const keys = createApiKeyGate(access)

  appUsersRoute(app, { keys, access, pins, cursors })
  userStatusRoute(app, { keys, access })
  sendRoute(app, { keys, access, sender, bodyLimit: config.BODY_LIMIT })
}
