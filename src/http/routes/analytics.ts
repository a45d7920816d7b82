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
import { MAX_WINDOW_DAYS } from '../../analytics/window.js'
import { DEFAULT_ATTRIBUTIONS_LIMIT, MAX_ATTRIBUTIONS_LIMIT, type AttributionItem } from '../../analytics/attributions.js'
import { HOURLY_WINDOWS } from '../../analytics/code-stats.js'
import { SUMMARY_WINDOWS } from '../../analytics/summary.js'
import { fieldColumns, sendCsv } from '../csv.js'
import { errorBodySchema } from '../errors.js'
import { registryParamSchema } from '../../contract/schemas.js'
import { cursorSchema, pageLimitSchema } from '../paging.js'

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
    registry: z.string().optional().describe('The registry namespace asked for (`registry`), EIP-55; absent: every namespace added together'),
    registered: z.boolean().describe('Whether the code is in this service’s builder-code registry'),
    totals: totalsSchema,
    uniqueSenders: z.number().describe('Exact distinct senders (transaction from, UserOperation sender) over the window'),
    byChain: z.array(totalsSchema.extend({ chainId: z.number() })),
    daily: z.array(
      z.object({ day: z.string(), transactions: z.number(), userOperations: z.number(), uniqueSenders: z.number().describe('Exact distinct senders that day') }),
    ),
    from: z.string().describe('First day of the window (UTC, inclusive)'),
    to: z.string().describe('Last day of the window (UTC, inclusive)'),
  })
  .meta({ id: 'CodeAnalytics' })

const leaderboardSchema = z
  .object({
    window: z.enum(LEADERBOARD_WINDOWS),
    entries: z.array(
      z.object({
        rank: z.number(),
        code: z.string(),
        registry: z.string().describe('`canonical` or `<chainId>:<address>` of a custom registry; each is its own namespace'),
        total: z.number().describe('Successful transactions + UserOperations'),
        transactions: z.number(),
        userOperations: z.number(),
        reverted: z.number(),
        walletAddress: z.string().nullable().describe('Wallet of the code in this service’s registry (canonical namespace only)'),
        share: z.number().describe('Share of the listed entries’ combined total over the whole window (0–1)'),
        previousTotal: z.number().nullable().describe('Total over the window just before; null for `all`'),
        change: z.number().nullable().describe('total − previousTotal'),
        invalid: z.boolean().describe('Outside the registry rule; only listed with include=invalid'),
      }),
    ),
  })
  .meta({ id: 'Leaderboard' })

const seriesPointSchema = z.object({
  start: z.string().describe('Start of the hour or UTC day (ISO time)'),
  attributions: z.number(),
  transactions: z.number(),
  userOperations: z.number(),
  reverted: z.number(),
})

const summarySchema = z
  .object({
    window: z.enum(SUMMARY_WINDOWS),
    chainId: z.number().optional(),
    from: z.string().nullable(),
    uniqueSendersFrom: z.string().nullable().describe('First UTC day the unique senders are counted over; null: all time'),
    totals: z.object({
      attributions: z.number().describe('Attribution rows (one per transaction or UserOperation and code)'),
      transactions: z.number().describe('Distinct successful attributed transactions'),
      userOperations: z.number().describe('Distinct successful attributed UserOperations'),
      total: z.number(),
      reverted: z.number().describe('Distinct attributed transactions and UserOperations that failed'),
      activeCodes: z.number().describe('Distinct (code, registry) with activity in the window'),
      uniqueSenders: z.number().describe('Exact distinct senders (error 0)'),
    }),
    granularity: z.enum(['hour', 'day']),
    series: z.array(seriesPointSchema),
  })
  .meta({ id: 'Summary' })

const hourlySchema = z
  .object({
    code: z.string(),
    registry: z.string().optional().describe('The registry namespace asked for, EIP-55'),
    window: z.enum(HOURLY_WINDOWS),
    from: z.string(),
    hourly: z.array(z.object({ hour: z.string(), transactions: z.number(), userOperations: z.number(), reverted: z.number() })),
  })
  .meta({ id: 'CodeHourly' })

const attributionPageSchema = z
  .object({
    code: z.string(),
    registry: z.string().optional().describe('The registry namespace asked for, EIP-55'),
    attributions: z.array(
      z.object({
        transactionHash: z.string(),
        kind: z.enum(['transaction', 'userOperation']),
        userOpHash: z.string().nullable(),
        chainId: z.number(),
        blockNumber: z.number(),
        timestamp: z.string().describe('Block time (ISO)'),
        status: z.enum(['success', 'reverted']),
        sender: z.string().describe('Transaction from, or UserOperation sender'),
        suffixGas: z.number(),
        schemaId: z.number(),
        codeStatus: z.enum(['registered', 'unregistered', 'invalid', 'custom']),
        registry: z.string(),
        explorerUrl: z.string().nullable().describe('Transaction page on the chain’s explorer (CHAINS explorerUrl, or a known default)'),
      }),
    ),
    nextCursor: z.string().optional().describe('Absent on the last page'),
  })
  .meta({ id: 'CodeAttributions' })

type CodeAnalytics = z.infer<typeof codeAnalyticsSchema>
type LeaderboardEntry = z.infer<typeof leaderboardSchema>['entries'][number]
type HourlyPoint = z.infer<typeof hourlySchema>['hourly'][number]

/** The CSV downloads' columns: each header beside the value it heads, in the JSON answer's names. */
const dailyCsv = fieldColumns<CodeAnalytics['daily'][number]>('day', 'transactions', 'userOperations', 'uniqueSenders')
const leaderboardCsv = fieldColumns<LeaderboardEntry>(
  'rank', 'code', 'registry', 'total', 'transactions', 'userOperations', 'reverted', 'walletAddress', 'share', 'previousTotal', 'change', 'invalid',
)
const summaryCsv = fieldColumns<z.infer<typeof seriesPointSchema>>('start', 'attributions', 'transactions', 'userOperations', 'reverted')
const hourlyCsv = fieldColumns<HourlyPoint>('hour', 'transactions', 'userOperations', 'reverted')
const attributionsCsv = fieldColumns<AttributionItem>(
  'transactionHash', 'kind', 'userOpHash', 'chainId', 'blockNumber', 'timestamp', 'status', 'sender', 'suffixGas', 'schemaId', 'codeStatus', 'registry', 'explorerUrl',
)

const formatSchema = z.enum(['json', 'csv'], { error: 'must be json or csv' }).default('json').describe('csv answers a download (Content-Disposition)')
const registrySchema = registryParamSchema
  .optional()
  .describe('One registry namespace: `canonical` (this service’s registry) or `<chainId>:<address>` of a custom registry (any letter case); default all, added together')
const codeParams = z.object({ code: z.string().min(1, 'must not be empty').max(500, 'must be at most 500 characters') })

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
        params: codeParams,
        querystring: z.object({
          chainId: chainIdSchema,
          from: z.string().optional().describe('YYYY-MM-DD'),
          to: z.string().optional().describe('YYYY-MM-DD'),
          registry: registrySchema,
          format: formatSchema,
        }),
        response: { 200: codeAnalyticsSchema, 400: errorBodySchema },
      },
    },
    async (request, reply) => {
      const result = await analytics.codeAnalytics(request.params.code, request.query)
      if (request.query.format !== 'csv') return result
      return sendCsv(reply, `${result.code}-daily-${result.from}-${result.to}.csv`, dailyCsv, result.daily)
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
          limit: pageLimitSchema({ max: MAX_LEADERBOARD_LIMIT, fallback: DEFAULT_LEADERBOARD_LIMIT }),
          include: z.enum(['invalid'], { error: 'must be invalid' }).optional().describe('`invalid` also lists codes outside the registry rule, flagged'),
          registry: registrySchema,
          format: formatSchema,
        }),
        response: { 200: leaderboardSchema, 400: errorBodySchema },
      },
    },
    async (request, reply) => {
      const { include, format, ...query } = request.query
      const result = await analytics.leaderboard({ ...query, includeInvalid: include === 'invalid' })
      if (format !== 'csv') return result
      return sendCsv(reply, `leaderboard-${result.window}${query.chainId ? `-chain-${query.chainId}` : ''}.csv`, leaderboardCsv, result.entries)
    },
  )

  app.get(
    '/v1/analytics/summary',
    {
      schema: {
        tags: ['analytics'],
        summary: 'Whole-index totals and series over a window',
        description:
          'Windows as the leaderboard’s. Totals count distinct transactions and UserOperations (a transaction carrying three codes counts once; ' +
          '`attributions` counts it three times). `uniqueSenders` is exact (reference-counted rows, error 0) over the UTC days from `uniqueSendersFrom`. ' +
          'The series is hourly for `24h` and `7d`, daily for `30d` and `all` (the last 366 days at most).',
        querystring: z.object({
          window: z.enum(SUMMARY_WINDOWS, { error: `must be one of ${SUMMARY_WINDOWS.join(', ')}` }).default('24h'),
          chainId: chainIdSchema,
          format: formatSchema.describe('csv answers the series as a download (Content-Disposition)'),
        }),
        response: { 200: summarySchema, 400: errorBodySchema },
      },
    },
    async (request, reply) => {
      const { format, ...query } = request.query
      const result = await analytics.summary(query)
      if (format !== 'csv') return result
      return sendCsv(reply, `summary-${result.window}${query.chainId ? `-chain-${query.chainId}` : ''}.csv`, summaryCsv, result.series)
    },
  )

  app.get(
    '/v1/analytics/codes/:code/hourly',
    {
      schema: {
        tags: ['analytics'],
        summary: 'Hourly series of one builder code (windows up to 7 days)',
        description: '`24h`: the current hour and the 23 before it; `7d`: every hour of the last 7 UTC days. Zero-filled.',
        params: codeParams,
        querystring: z.object({
          window: z.enum(HOURLY_WINDOWS, { error: `must be one of ${HOURLY_WINDOWS.join(', ')}` }).default('24h'),
          chainId: chainIdSchema,
          registry: registrySchema,
          format: formatSchema,
        }),
        response: { 200: hourlySchema, 400: errorBodySchema },
      },
    },
    async (request, reply) => {
      const { format, ...query } = request.query
      const result = await analytics.codeHourly(request.params.code, query)
      if (format !== 'csv') return result
      return sendCsv(reply, `${result.code}-hourly-${result.window}.csv`, hourlyCsv, result.hourly)
    },
  )

  app.get(
    '/v1/analytics/codes/:code/attributions',
    {
      schema: {
        tags: ['analytics'],
        summary: 'A code’s attributed transactions and UserOperations, newest first',
        description:
          'One registry namespace with `registry`, else all of them. Ordered by block time then insertion, paged by an opaque keyset cursor (`nextCursor`, absent on the last page): ' +
          'rows indexed meanwhile never shift a page. `explorerUrl` links the transaction on the chain’s explorer when one is known.',
        params: codeParams,
        querystring: z.object({
          chainId: chainIdSchema,
          kind: z.enum(['transaction', 'userOperation'], { error: 'must be transaction or userOperation' }).optional(),
          status: z.enum(['success', 'reverted'], { error: 'must be success or reverted' }).optional(),
          registry: registrySchema,
          cursor: cursorSchema.optional(),
          limit: pageLimitSchema({ max: MAX_ATTRIBUTIONS_LIMIT, fallback: DEFAULT_ATTRIBUTIONS_LIMIT }),
          format: formatSchema,
        }),
        response: { 200: attributionPageSchema, 400: errorBodySchema },
      },
    },
    async (request, reply) => {
      const { format, ...query } = request.query
      const page = await analytics.attributions({ code: request.params.code, ...query })
      if (format !== 'csv') return page
      if (page.nextCursor) reply.header('x-next-cursor', page.nextCursor)
      return sendCsv(reply, `${page.code}-attributions.csv`, attributionsCsv, page.attributions)
    },
  )
}
