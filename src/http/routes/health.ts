import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { pingDatabase, type Database } from '../../db/client.js'
import { refusedRollbacks } from '../../store/chain-state.js'
import { stuckRanges } from '../../store/ranges.js'
import { pingRedis, type Redis } from '../../redis/client.js'

const stuckRangeSchema = z.object({
  chain_id: z.number(),
  from_block: z.number(),
  to_block: z.number(),
  attempts: z.number(),
  last_error: z.string().nullable(),
  last_error_at: z.string().nullable(),
})

const readinessSchema = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.object({ postgres: z.boolean(), redis: z.boolean() }),
  /** Ranges that failed STUCK_RANGE_ATTEMPTS times and why: the API still serves, but the index stops advancing there. */
  stuck_ranges: z.array(stuckRangeSchema),
  /** Chains whose follower refuses a reorg reaching below the blocks committed as final: not ready until the node agrees again. */
  refused_reorgs: z.array(z.object({ chain_id: z.number(), rollback_to: z.number(), final_through: z.number(), since: z.string() })),
})

async function stuckDetail(db: Database, stuckAfter: number) {
  const stuck = await stuckRanges(db.$client, stuckAfter).catch(() => [])
  return stuck.map((range) => ({
    chain_id: range.chainId,
    from_block: range.fromBlock,
    to_block: range.toBlock,
    attempts: range.attempts,
    last_error: range.lastError,
    last_error_at: range.lastErrorAt?.toISOString() ?? null,
  }))
}

/** Liveness (`/healthz`: the process answers) and readiness (`/readyz`: its dependencies answer too, and which ranges are stuck). */
export const healthRoutes: FastifyPluginAsyncZod<{ db: Database; redis: Redis; stuckAfter?: number }> = async (app, { db, redis, stuckAfter = 5 }) => {
  app.get(
    '/healthz',
    { schema: { tags: ['health'], response: { 200: z.object({ status: z.literal('ok') }) } }, logLevel: 'warn' },
    async () => ({ status: 'ok' as const }),
  )

  app.get(
    '/readyz',
    { schema: { tags: ['health'], response: { 200: readinessSchema, 503: readinessSchema } }, logLevel: 'warn' },
    async (_request, reply) => {
      const [postgres, redisUp] = await Promise.all([pingDatabase(db), pingRedis(redis)])
      const stuck = postgres ? await stuckDetail(db, stuckAfter) : []
      const refused = postgres ? await refusedRollbacks(db.$client).catch(() => []) : []
      const ready = postgres && redisUp && refused.length === 0
      return reply.code(ready ? 200 : 503).send({
        status: ready ? 'ok' : 'unavailable',
        checks: { postgres, redis: redisUp },
        stuck_ranges: stuck,
        refused_reorgs: refused.map((r) => ({ chain_id: r.chainId, rollback_to: r.rollbackTo, final_through: r.finalThrough, since: r.since.toISOString() })),
      })
    },
  )
}
