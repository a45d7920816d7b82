import { createServer as createHttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Config } from '../config/env.js'
import type { ChainConfig } from '../config/chains.js'
import { closeDatabase, createDatabase, type Database } from '../db/client.js'
import { migrateDatabase } from '../db/migrate.js'
import { createServer, type Server } from '../http/server.js'
import type { Logger } from '../logger.js'
import { createRedis, type Redis } from '../redis/client.js'
import { startNotificationWorker } from '../notifications/delivery-worker.js'
import { Registry as MetricsRegistry, collectDefaultMetrics } from 'prom-client'
import { registerStateMetrics } from '../metrics/state.js'
import { startIndexer, type RunningIndexer } from './indexer.js'
import { createRegistry } from '../registry/register.js'
import { acquireDevnetLock, checkPortFree, instanceName, portError } from './preflight.js'

export type Role = 'api' | 'follower' | 'worker'

export type Running = {
  /** The HTTP server when the api role runs. */
  server: Server | undefined
  /** Address the API listens on, e.g. http://127.0.0.1:3000. */
  url: string | undefined
  stop(): Promise<void>
}

/**
 * Shutdown runs in stages, each stage's closers in parallel: the HTTP server
 * (in-flight requests finish while their dependencies are open), then what
 * produces work (indexer, delivery worker), then what they used.
 */
type Closer = { name: string; stage: 0 | 1 | 2; close: () => Promise<unknown> }

/**
 * No RPC configured: a local anvil chain with generated traffic, so a
 * newcomer sees the whole pipeline work. Its traffic wallets are registered
 * so their builder codes resolve (and, in development, pin a demo app of the
 * notification API), and an audit logs ground truth vs index.
 */
async function startLocalDevnet(config: Config, db: Database, logger: Logger) {
  // imported here, by the one role that starts it: the devnet's contracts and traffic are no cost to any other process
  const { startDevnet } = await import('../../devnet/index.js')
  const { startDevnetAudit } = await import('../../devnet/audit.js')
  // at shutdown the batch in flight is abandoned, not waited for: the devnet is gone with the process anyway
  const devnet = await startDevnet({ logger: logger.child({ component: 'devnet' }), port: config.DEVNET_PORT, stopGraceMs: 0 })
  const registry = createRegistry({ db })
  for (const wallet of devnet.trafficWallets) await registry.register(wallet)
  // the notification API's examples need a project, app, key and pinned wallets: seeded in development only
  const { seedNotificationsDemo } = await import('../../devnet/notifications-demo.js')
  await seedNotificationsDemo({ db, wallets: devnet.trafficWallets, nodeEnv: config.NODE_ENV, logger: logger.child({ component: 'devnet' }) })
  const audit = startDevnetAudit({ db, chainId: devnet.chain.chainId!, truth: devnet.truth, logger })
  return {
    chain: devnet.chain,
    async stop() {
      audit.stop()
      await devnet.stop()
    },
  }
}

/**
 * /metrics alone on METRICS_PORT: Prometheus scrapes a follower or worker
 * process, which has no API, the same way it scrapes the API.
 */
async function serveMetrics(registry: MetricsRegistry, host: string, port: number) {
  const server = createHttpServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n')
      return
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: Error) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`${error.message}\n`),
    )
  })
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve))
  const address = server.address() as AddressInfo
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
  return {
    url,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()).closeAllConnections()),
  }
}

/**
 * Starts the requested roles in this process. `start` runs all of them; the
 * same binary runs each alone so operators can scale workers across machines
 * that share Redis and Postgres.
 */
export async function runRoles(config: Config, roles: ReadonlySet<Role>, logger: Logger): Promise<Running> {
  const indexing = roles.has('follower') || roles.has('worker')
  const runsDevnet = indexing && config.chains.length === 0 && config.DEVNET && roles.has('follower')
  // what would make this process exit is found before the devnet resets anything (preflight.ts)
  if (roles.has('api')) await checkPortFree('PORT', config.HOST, config.PORT)
  if (config.METRICS_PORT !== undefined) await checkPortFree('METRICS_PORT', config.HOST, config.METRICS_PORT)
  if (runsDevnet) await checkPortFree('DEVNET_PORT', '127.0.0.1', config.DEVNET_PORT)

  await migrateDatabase(config.DATABASE_URL)
  logger.info('database migrated')

  const closers: Closer[] = []
  try {
    return await startRoles(config, roles, logger, { indexing, runsDevnet, closers })
  } catch (error) {
    // whatever started before the failure is let go, so an in-process caller is left with nothing running
    await closeInStages(closers, logger)
    throw error
  }
}

async function closeInStages(closers: readonly Closer[], logger: Logger) {
  for (const stage of [0, 1, 2]) {
    await Promise.all(
      closers
        .filter((closer) => closer.stage === stage)
        .map((closer) => closer.close().catch((error) => logger.warn({ err: error, component: closer.name }, 'error while closing'))),
    )
  }
}

async function startRoles(
  config: Config,
  roles: ReadonlySet<Role>,
  logger: Logger,
  { indexing, runsDevnet, closers }: { indexing: boolean; runsDevnet: boolean; closers: Closer[] },
): Promise<Running> {
  const db: Database = createDatabase({ url: config.DATABASE_URL, poolSize: config.DATABASE_POOL_SIZE })
  closers.push({ name: 'postgres', stage: 2, close: () => closeDatabase(db) })
  const redis: Redis = createRedis(config.REDIS_URL, 'request')
  closers.push({ name: 'redis', stage: 2, close: () => redis.quit().catch(() => redis.disconnect()) })
  // notification delivery (the api role's server creates its own delivery queue); closes before Postgres
  if (roles.has('worker')) closers.push({ ...startNotificationWorker({ config, db, logger }), stage: 1 })

  const metricsRegistry = new MetricsRegistry()
  collectDefaultMetrics({ register: metricsRegistry })

  let indexer: RunningIndexer | undefined
  let chains = config.chains
  /** Names the devnet lock's holder with the ports it listens on, for the instance it refuses. */
  let describeHolder: (apiPort: number | undefined) => void = () => {}
  if (runsDevnet) {
    // held for the process's life: a second devnet instance on this database is refused instead of resetting this one's index
    const name = (ports: { PORT?: number | undefined; DEVNET_PORT?: number }) => instanceName(roles.size === 3 ? 'start' : [...roles].join('+'), ports)
    const lock = await acquireDevnetLock(config.DATABASE_URL, name({}))
    closers.push({ name: 'devnet lock', stage: 2, close: () => lock.release() })
    const devnet = await startLocalDevnet(config, db, logger)
    describeHolder = (apiPort) => void lock.describe(name({ PORT: apiPort, DEVNET_PORT: Number(new URL(devnet.chain.rpcUrl).port) }))
    describeHolder(undefined)
    chains = [devnet.chain]
    closers.push({ name: 'devnet', stage: 2, close: () => devnet.stop() })
  }
  if (indexing && chains.length === 0) {
    logger.warn('no chain configured (set RPC_URL or CHAINS): follower and workers stay idle')
  } else if (indexing) {
    indexer = await startIndexer({
      config,
      chains,
      db,
      roles: { follower: roles.has('follower'), worker: roles.has('worker') },
      logger,
      metricsRegistry,
    })
    closers.push({ name: 'indexer', stage: 1, close: () => indexer!.stop() })
  }
  let metricsUrl: string | undefined
  if (config.METRICS_PORT !== undefined) {
    const metricsServer = await serveMetrics(metricsRegistry, config.HOST, config.METRICS_PORT)
    closers.push({ name: 'metrics', stage: 0, close: () => metricsServer.close() })
    metricsUrl = `${metricsServer.url}/metrics`
    logger.info({ url: metricsUrl }, 'metrics listening')
  }
  registerStateMetrics(metricsRegistry, { db, queue: indexer?.queue, stuckAfter: config.STUCK_RANGE_ATTEMPTS })

  let server: Server | undefined
  let url: string | undefined
  if (roles.has('api')) {
    // chains resolved by the indexer (ids read from the nodes) spare validation an eth_chainId on first use
    server = await createServer({ config, db, redis, logger, metricsRegistry, chains: indexer?.chains ?? chains })
    url = await server.listen({ host: config.HOST, port: config.PORT }).catch((error: unknown) => {
      throw portError('PORT', config.HOST, config.PORT, error)
    })
    // the server closes first so in-flight requests finish while their dependencies are still open
    closers.push({ name: 'http', stage: 0, close: () => server!.close() })
    logger.info({ url, docs: `${url}/docs` }, 'API listening')
    describeHolder(Number(new URL(url).port))
  }

  logger.info(readyLine({ roles, url, metricsUrl, chains: indexer?.chains ?? chains, devnet: runsDevnet }), 'ready')
  return { server, url, stop: () => closeInStages(closers, logger) }
}

/** The one line that says start-up is over: where to look, and what this process does. */
function readyLine(options: { roles: ReadonlySet<Role>; url: string | undefined; metricsUrl: string | undefined; chains: readonly ChainConfig[]; devnet: boolean }) {
  const { url } = options
  return {
    roles: [...options.roles],
    ...(url && { dashboard: `${url}/dashboard`, api: `${url}/v1`, docs: `${url}/docs`, metrics: options.metricsUrl ?? `${url}/metrics` }),
    ...(!url && options.metricsUrl && { metrics: options.metricsUrl }),
    chains: options.chains.map((chain) => ({ chain_id: chain.chainId, rpc: new URL(chain.rpcUrl).host, ...(chain.devnet && { devnet: true }) })),
    ...(options.devnet && { stop: 'Ctrl-C (or SIGTERM): exits once in-flight work is handed back' }),
  }
}
