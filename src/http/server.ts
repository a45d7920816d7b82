import fastifySwagger from '@fastify/swagger'
import fastifySwaggerUi from '@fastify/swagger-ui'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type RawServerDefault } from 'fastify'
import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod'
import type { Registry as MetricsRegistry } from 'prom-client'
import type { Config } from '../config/env.js'
import type { Database } from '../db/client.js'
import type { Logger } from '../logger.js'
import { logRequests } from './request-log.js'
import type { Redis } from '../redis/client.js'
import type { DeliveryQueue } from '../notifications/delivery-queue.js'
import { createRegistry, type Registry } from '../registry/register.js'
import { createClientErrorHandler, errorBody, errorHandler, frameworkErrorHandler, logClientAborts } from './errors.js'
import { trustProxyFunction } from './client.js'
import { createClientSlots, limitConnectionsPerClient } from './client-slots.js'
import { createRefusalCounter } from './refusals.js'
import { createValidationBudget } from './validation-budget.js'
import { createAnalytics } from '../analytics/analytics.js'
import { analyticsRoutes } from './routes/analytics.js'
import { createExplorerLookup } from '../analytics/attributions.js'
import { createReadCache } from '../analytics/read-cache.js'
import { createRollingWindows } from '../store/rolling-windows.js'
import { indexerStatusRoutes } from './routes/indexer-status.js'
import { streamRoutes } from './routes/stream.js'
import { createStreamHub } from '../stream/hub.js'
import { builderCodeRoutes } from './routes/builder-codes.js'
import { dashboardRoutes } from './routes/dashboard.js'
import { attributionRoutes } from './routes/attribution.js'
import type { ChainEndpoint } from '../validation/chains.js'
import { withValidationRpc } from '../validation/endpoints.js'
import { createValidator } from '../validation/validate.js'
import { healthRoutes } from './routes/health.js'
import { adminRoutes } from './routes/admin.js'
import { notificationRoutes } from './routes/notifications/index.js'
import { platformRoutes } from './routes/platform.js'
import { metricsRoutes } from './routes/metrics.js'
import { drainRefusedBodies, limitBodies, limitJsonDepth, measureRequests } from './guard.js'

/** Everything the routes need, built once by the process and shared. */
export type ServerDeps = {
  config: Config
  db: Database
  /** Fail-fast connection for the request path (readiness, rate limit). */
  redis: Redis
  logger: Logger
  registry?: Registry
  /** Producer side of the notification delivery queue; created from config (and closed with the server) when omitted. */
  deliveryQueue?: DeliveryQueue
  /** Prometheus registry served at /metrics (prom-client); omitted, no /metrics route. */
  metricsRegistry?: MetricsRegistry
  /** Chains that validation asks over RPC (ids resolved at start-up or read lazily); defaults to config.chains. */
  chains?: readonly ChainEndpoint[]
}

export type Server = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger, ZodTypeProvider>

/**
 * How often Node looks for requests past their headers or request timeout.
 * Its default (30 s) would let a slow client hold a connection up to 30 s
 * past the timeout; the check walks the open connections, cheap at this pace.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000

export async function createServer(deps: ServerDeps): Promise<Server> {
  const { config } = deps
  const refusals = createRefusalCounter(deps.metricsRegistry)
  // one reading of TRUST_PROXY for request.ip and the connection cap
  const trustProxy = trustProxyFunction(config.TRUST_PROXY)
  const app: Server = Fastify({
    loggerInstance: deps.logger.child({ component: 'http' }) as FastifyBaseLogger,
    // request lines at debug, server errors and slow answers at info (request-log.ts)
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.BODY_LIMIT,
    trustProxy,
    // a request that never finishes arriving (slow headers, a body declared longer than sent) is answered 408 and closed
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    http: { headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS, connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS },
    // drain in-flight requests on close, answer new ones 503
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // router and HTTP-parser errors happen before any error handler runs: same body shape for them
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler: createClientErrorHandler(() => refusals.refused('request_timeout')),
    // codes inside a suffix may be long; the route's own schema answers their length in the shared error shape
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1_000 },
  }).withTypeProvider<ZodTypeProvider>()

  const connections = limitConnectionsPerClient(app.server, {
    max: config.HTTP_MAX_CONNECTIONS_PER_IP,
    trustProxy,
    onRefused: () => refusals.refused('connections_per_client'),
  })
  // a request on a connection the cap refused (and already answered 429) is dropped before any work
  app.addHook('onRequest', async (request, reply) => {
    if (!connections.isRefused(request.raw.socket)) return
    reply.hijack()
    request.raw.socket.destroy()
  })

  logRequests(app)
  logClientAborts(app, refusals.clientAborted)

  // before any route: what a request may cost, and what each did
  limitBodies(app, config.BODY_LIMIT)
  drainRefusedBodies(app)
  limitJsonDepth(app)
  if (deps.metricsRegistry) measureRequests(app, deps.metricsRegistry)

  app.setValidatorCompiler(validatorCompiler)
  app.setSerializerCompiler(serializerCompiler)
  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody('not_found', `No route for ${request.method} ${request.url.split('?')[0]}`)),
  )

  await app.register(fastifySwagger, {
    openapi: {
      info: {
        title: 'Attribution indexer',
        description: 'ERC-8021 builder-code registry, attribution analytics and app notifications',
        version: '1.0.0',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
          adminToken: { type: 'http', scheme: 'bearer' },
          platformToken: { type: 'http', scheme: 'bearer' },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  })
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' })
  // built and serialized once, while starting (tens of ms of one event-loop turn), never for a client
  let openapiJson: string | undefined
  const openapiDocument = () => (openapiJson ??= JSON.stringify(app.swagger()))
  app.addHook('onReady', async () => void openapiDocument())
  app.get('/openapi.json', { schema: { hide: true } }, async (_request, reply) => reply.type('application/json; charset=utf-8').send(openapiDocument()))

  const registry = deps.registry ?? createRegistry({ db: deps.db })
  await app.register(healthRoutes, { db: deps.db, redis: deps.redis, stuckAfter: config.STUCK_RANGE_ATTEMPTS })
  if (deps.metricsRegistry) await app.register(metricsRoutes, { registry: deps.metricsRegistry })
  await app.register(builderCodeRoutes, { registry, config, redis: deps.redis, refusals })
  await app.register(notificationRoutes, { config, db: deps.db, redis: deps.redis, refusals, deliveryQueue: deps.deliveryQueue })
  await app.register(adminRoutes, { db: deps.db, adminToken: config.ADMIN_TOKEN })
  await app.register(platformRoutes, { config: deps.config, db: deps.db })
  const chains = deps.chains ?? config.chains
  const analyticsCache = createReadCache({ ttlMs: config.ANALYTICS_CACHE_MS })
  const hub = createStreamHub({
    sql: deps.db.$client,
    maxSubscribers: config.STREAM_MAX_SUBSCRIBERS,
    heartbeatMs: config.STREAM_HEARTBEAT_MS,
    logger: deps.logger.child({ component: 'stream' }),
    onChange: analyticsCache.invalidate,
  })
  if (config.ANALYTICS_CACHE_MS > 0) {
    // the cache is only sound while commit notifications arrive; without them it still expires by its TTL
    hub.start().catch((error: Error) => deps.logger.warn({ err: error.message }, 'analytics cache: not listening for commits yet'))
  }
  const windows = createRollingWindows(deps.db.$client)
  const keeper = windows.keepCurrent((error) =>
    deps.logger.warn({ err: error.message }, 'analytics: rolling windows not moved yet; reads will try again'),
  )
  app.addHook('onClose', async () => keeper.stop())
  await app.register(analyticsRoutes, {
    analytics: createAnalytics({ db: deps.db, registry, explorerOf: createExplorerLookup(chains), windows, cache: analyticsCache }),
  })
  await app.register(indexerStatusRoutes, {
    db: deps.db,
    redis: deps.redis,
    queuePrefix: config.QUEUE_PREFIX,
    chainIds: chains.map((chain) => chain.chainId).filter((id): id is number => id !== undefined),
    stuckAfterAttempts: config.STUCK_RANGE_ATTEMPTS,
  })
  await app.register(dashboardRoutes)
  const validator = createValidator({
    indexCacheMs: config.VALIDATE_CACHE_MS,
    db: deps.db,
    registry,
    // validation may ask a node of its own (VALIDATE_RPC_URL), so anonymous lookups never spend the indexer's quota
    chains: withValidationRpc(chains, config.VALIDATE_RPC_URL),
    rpcTimeoutMs: config.RPC_TIMEOUT_MS,
    rpcMaxAnswerBytes: config.RPC_MAX_ANSWER_BYTES,
    rpcHttpClient: config.RPC_HTTP_CLIENT,
    logWindow: config.VALIDATE_LOG_WINDOW,
    missCacheMs: config.VALIDATE_MISS_CACHE_MS,
    nodeConcurrency: config.VALIDATE_RPC_CONCURRENCY,
    admitNodeLookup: createValidationBudget({ config, redis: deps.redis, refusals, logger: app.log }),
    onNodeBusy: () => refusals.refused('validate_node_busy'),
  })
  await app.register(attributionRoutes, { validator })
  // open streams never finish by themselves: end them first so close() can drain the rest
  app.addHook('preClose', async () => hub.stop())
  await app.register(streamRoutes, {
    hub,
    retryMs: 2_000,
    perClient: createClientSlots(config.STREAM_MAX_SUBSCRIBERS_PER_IP),
    maxPerClient: config.STREAM_MAX_SUBSCRIBERS_PER_IP,
    refusals,
  })
  return app
}
