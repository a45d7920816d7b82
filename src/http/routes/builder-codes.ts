import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { Config } from '../../config/env.js'
import type { Redis } from '../../redis/client.js'
import { createRateLimiter } from '../../redis/rate-limit.js'
import type { Registry } from '../../registry/register.js'
import { clientKey } from '../client.js'
import { errorBodySchema, notFound } from '../errors.js'
import { tooManyRequests, type RefusalCounter } from '../refusals.js'
import { walletAddressSchema } from '../../contract/schemas.js'

const builderCodeSchema = z
  .object({
    builderCode: z.string().describe('`bc_` followed by 8 characters of 0-9a-z'),
    walletAddress: z.string().describe('EIP-55 checksummed wallet address'),
  })
  .meta({ id: 'BuilderCode' })

/** `wallet_address` is accepted as an alias; errors always name `walletAddress`. */
const registerBodySchema = z.preprocess(
  (body) => {
    if (body && typeof body === 'object' && !Array.isArray(body)) {
      const record = body as Record<string, unknown>
      if (record.walletAddress === undefined && record.wallet_address !== undefined) {
        return { walletAddress: record.wallet_address }
      }
    }
    return body
  },
  z.object({ walletAddress: walletAddressSchema }, { error: 'must be a JSON object' }),
)

export type BuilderCodeRoutesOptions = {
  registry: Registry
  config: Pick<Config, 'QUEUE_PREFIX' | 'REGISTER_RATE_LIMIT_MAX' | 'REGISTER_RATE_LIMIT_WINDOW_MS'>
  /** Fail-fast request connection; holds the registration counters. */
  redis: Redis
  refusals: RefusalCounter
}

export const builderCodeRoutes: FastifyPluginAsyncZod<BuilderCodeRoutesOptions> = async (app, { registry, config, redis, refusals }) => {
  const windowSeconds = config.REGISTER_RATE_LIMIT_WINDOW_MS / 1000
  /**
   * Anyone may register any wallet, and every new wallet is a row kept
   * forever: registrations per client are counted (REGISTER_RATE_LIMIT_*).
   * While Redis is down this process counts on its own rather than let rows
   * grow unchecked.
   */
  const limiter = createRateLimiter({
    redis,
    prefix: config.QUEUE_PREFIX,
    name: 'register-rate',
    max: config.REGISTER_RATE_LIMIT_MAX,
    windowMs: config.REGISTER_RATE_LIMIT_WINDOW_MS,
    logger: app.log,
    whenUnavailable: 'count-locally',
  })
  async function limitRegistrations(request: FastifyRequest, reply: FastifyReply) {
    const decision = await limiter.hit(clientKey(request.ip))
    reply.header('x-ratelimit-limit', decision.limit)
    reply.header('x-ratelimit-remaining', decision.remaining)
    if (!decision.allowed) {
      refusals.refused('register_per_client')
      throw tooManyRequests(`registration: more than ${decision.limit} in ${windowSeconds} s from this client`, decision.resetMs)
    }
  }

  app.post(
    '/v1/agents/builder-codes',
    {
      onRequest: limitRegistrations,
      schema: {
        tags: ['builder codes'],
        summary: 'Get or create the builder code of a wallet',
        description:
          'Deterministic per wallet and safe to repeat: the same wallet always gets the same code. ' +
          `At most ${config.REGISTER_RATE_LIMIT_MAX} registrations per ${windowSeconds} s per client IP (IPv6 per /64); beyond, 429 with \`Retry-After\`.`,
        body: registerBodySchema,
        response: { 200: builderCodeSchema, 400: errorBodySchema, 429: errorBodySchema },
      },
    },
    async (request) => {
      // 200 whether created or found: existing clients treat this call as idempotent
      const { builderCode, walletAddress } = await registry.register(request.body.walletAddress)
      return { builderCode, walletAddress }
    },
  )

  app.get(
    '/v1/agents/builder-codes/:code',
    {
      schema: {
        tags: ['builder codes'],
        summary: 'Look up the wallet of a builder code',
        params: z.object({ code: z.string().max(64, 'must be at most 64 characters') }),
        response: { 200: builderCodeSchema, 404: errorBodySchema },
      },
    },
    async (request) => {
      const found = await registry.findByCode(request.params.code)
      if (!found) throw notFound(`builder code ${request.params.code} is not registered`)
      return found
    },
  )
}
