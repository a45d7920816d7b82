import type { FastifyInstance } from 'fastify'

/**
 * Request logs that do not drown the rest: a dashboard polling every few
 * seconds made most of the info lines `incoming request` / `request
 * completed`. Every request is logged at debug; at info only what an
 * operator acts on: answers with a server error, and slow answers.
 */

/** An answer slower than this is logged at info whatever its status. */
export const SLOW_REQUEST_MS = 1_000

/** The level of a completed request's line: info for server errors and slow answers, debug for the rest. */
export function requestLogLevel(statusCode: number, elapsedMs: number): 'info' | 'debug' {
  return statusCode >= 500 || elapsedMs >= SLOW_REQUEST_MS ? 'info' : 'debug'
}

/** Replaces Fastify's own request lines (both at info); the server must be created with a LogController that has `disableRequestLogging: true`. */
export function logRequests(app: FastifyInstance) {
  app.addHook('onRequest', async (request) => {
    request.log.debug({ req: request }, 'incoming request')
  })
  app.addHook('onResponse', async (request, reply) => {
    const elapsed = reply.elapsedTime
    const level = requestLogLevel(reply.statusCode, elapsed)
    request.log[level](
      { req: request, res: { statusCode: reply.statusCode }, responseTime: elapsed, ...(elapsed >= SLOW_REQUEST_MS && { slow: true }) },
      'request completed',
    )
  })
}
