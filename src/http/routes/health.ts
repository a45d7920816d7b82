import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod'
import { z } from 'zod'
import { pingDatabase, type Database } from '../../db/client.js'
import { pingRedis, type Redis } from '../../redis/client.js'

const readinessSchema = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.object({ postgres: z.boolean(), redis: z.boolean() }),
})

/** Liveness (`/healthz`: the process answers) and readiness (`/readyz`: its dependencies answer too). */
export const healthRoutes: FastifyPluginAsyncZod<{ db: Database; redis: Redis }> = async (app, { db, redis }) => {
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
      const ready = postgres && redisUp
      return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable', checks: { postgres, redis: redisUp } })
    },
  )
}
