import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import type { Analytics } from '../../analytics/analytics.js'
import {
  DEFAULT_LEADERBOARD_LIMIT,
  LEADERBOARD_WINDOWS,
  MAX_LEADERBOARD_LIMIT,
} from '../../analytics/leaderboard.js'
import { InvalidWindowError, MAX_WINDOW_DAYS } from '../../analytics/window.js'
import { badRequest, errorBodySchema } from '../errors.js'

/**
 * Dashboards poll these endpoints every few seconds. A short max-age lets a
 * browser or proxy answer repeats itself, and the ETag turns the rest into a
 * bodiless 304 once nothing changed.
 */
const MAX_AGE_SECONDS = 5

const chainIdSchema = z.coerce
  .number({ error: 'must be a positive integer' })
  .int('must be a positive integer')
  .positive('must be a positive integer')
  // chain ids are stored as Postgres integers: a larger one can match nothing, and would fail the query
  .max(2_147_483_647, 'must be a positive integer no larger than 2147483647')
  .optional()

const totalsSchema = z.object({
  transactions: z.number().describe('Successful attributed transactions'),
  userOperations: z.number().describe('Successful attributed UserOperations'),
  total: z.number().describe('transactions + userOperations'),
  reverted: z.number().describe('Attributed transactions and UserOperations that failed'),
  suffixGas: z.number().describe('Calldata gas spent on suffixes (EIP-2028)'),
})

const codeAnalyticsSchema = z
  .object({
    code: z.string(),
    registered: z.boolean().describe('Whether the code is in this service’s builder-code registry'),
    totals: totalsSchema,
    byChain: z.array(totalsSchema.extend({ chainId: z.number() })),
    daily: z.array(z.object({ day: z.string(), transactions: z.number(), userOperations: z.number() })),
    from: z.string().describe('First day of the window (UTC, inclusive)'),
    to: z.string().describe('Last day of the window (UTC, inclusive)'),
  })
  .meta({ id: 'CodeAnalytics' })

const leaderboardSchema = z
  .object({
    window: z.enum(LEADERBOARD_WINDOWS),
    entries: z.array(z.object({ rank: z.number(), code: z.string(), total: z.number() })),
  })
  .meta({ id: 'Leaderboard' })

function etagOf(payload: string): string {
  return `W/"${createHash('sha1').update(payload).digest('base64url')}"`
}

function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false
  const bare = etag.replace(/^W\//, '')
  return ifNoneMatch.split(',').some((candidate) => {
    const trimmed = candidate.trim()
    return trimmed === '*' || trimmed.replace(/^W\//, '') === bare
  })
}

/** Cache headers for successful answers; errors are never cached. */
async function conditionalCaching(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
  if (reply.statusCode !== 200 || typeof payload !== 'string') {
    reply.header('cache-control', 'no-store')
    return payload
  }
  const etag = etagOf(payload)
  reply.header('etag', etag)
  reply.header('cache-control', `public, max-age=${MAX_AGE_SECONDS}`)
  if (matchesEtag(request.headers['if-none-match'], etag)) {
    reply.code(304)
    return ''
  }
  return payload
}

export const analyticsRoutes: FastifyPluginAsyncZod<{ analytics: Analytics }> = async (app, { analytics }) => {
  // hooks added inside this plugin only apply to its routes
  app.addHook('onSend', conditionalCaching)

  app.get(
    '/v1/analytics/codes/:code',
    {
      schema: {
        tags: ['analytics'],
        summary: 'Totals and daily series of one builder code',
        description:
          `Counts over the days \`from\`…\`to\` (UTC, inclusive; default the last 30 days, at most ${MAX_WINDOW_DAYS}). ` +
          '`transactions` and `userOperations` count successful ones; `reverted` the failed ones of both kinds. ' +
          'Days without activity are present with zeros. Served from aggregate tables; ETag and Cache-Control allow cheap polling.',
        // Fastify's router answers 414 for path parameters over 100 characters
        params: z.object({ code: z.string().min(1, 'must not be empty').max(500, 'must be at most 500 characters') }),
        querystring: z.object({
          chainId: chainIdSchema,
          from: z.string().optional().describe('YYYY-MM-DD'),
          to: z.string().optional().describe('YYYY-MM-DD'),
        }),
        response: { 200: codeAnalyticsSchema, 400: errorBodySchema },
      },
    },
    async (request) => {
      try {
        return await analytics.codeAnalytics(request.params.code, request.query)
      } catch (error) {
        if (error instanceof InvalidWindowError) throw badRequest(error.field, error.reason)
        throw error
      }
    },
  )

  app.get(
    '/v1/analytics/leaderboard',
    {
      schema: {
        tags: ['analytics'],
        summary: 'Builder codes ranked by successful transactions + UserOperations',
        description:
          '`24h` is the rolling last 24 hours (hourly buckets); `7d` and `30d` are the last 7 or 30 UTC days including today; ' +
          '`all` is everything indexed. Ties are ordered by code; `rank` is the 1-based position.',
        querystring: z.object({
          window: z.enum(LEADERBOARD_WINDOWS, { error: `must be one of ${LEADERBOARD_WINDOWS.join(', ')}` }).default('7d'),
          chainId: chainIdSchema,
          limit: z.coerce
            .number({ error: `must be an integer from 1 to ${MAX_LEADERBOARD_LIMIT}` })
            .int(`must be an integer from 1 to ${MAX_LEADERBOARD_LIMIT}`)
            .min(1, `must be an integer from 1 to ${MAX_LEADERBOARD_LIMIT}`)
            .max(MAX_LEADERBOARD_LIMIT, `must be an integer from 1 to ${MAX_LEADERBOARD_LIMIT}`)
            .default(DEFAULT_LEADERBOARD_LIMIT),
        }),
        response: { 200: leaderboardSchema, 400: errorBodySchema },
      },
    },
    async (request) => analytics.leaderboard(request.query),
  )
}
