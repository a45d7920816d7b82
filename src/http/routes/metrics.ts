import type { FastifyPluginAsync } from 'fastify'
import type { Registry } from 'prom-client'

/** Prometheus exposition of this process's metrics registry. */
export const metricsRoutes: FastifyPluginAsync<{ registry: Registry }> = async (app, { registry }) => {
  app.get('/metrics', { schema: { hide: true }, logLevel: 'warn' }, async (_request, reply) => {
    const body = await registry.metrics()
    return reply.type(registry.contentType).send(body)
  })
}
