import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { Registry } from '../../registry/register.js'
import { errorBodySchema, notFound } from '../errors.js'
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

export const builderCodeRoutes: FastifyPluginAsyncZod<{ registry: Registry }> = async (app, { registry }) => {
  app.post(
    '/v1/agents/builder-codes',
    {
      schema: {
        tags: ['builder codes'],
        summary: 'Get or create the builder code of a wallet',
        description: 'Deterministic per wallet and safe to repeat: the same wallet always gets the same code.',
        body: registerBodySchema,
        response: { 200: builderCodeSchema, 400: errorBodySchema },
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
