import type { Registry as MetricsRegistry } from 'prom-client'
import { entryPointSet } from '../attribution/userops.js'
import { rpcUrlsOf, type ChainConfig } from '../config/chains.js'
import type { Config } from '../config/env.js'
import type { Database } from '../db/client.js'
import { createFollower, type Follower } from '../follower/follower.js'
import { verifyChainIdentity } from '../follower/identity.js'
import type { Logger } from '../logger.js'
import { createIndexerMetrics, type IndexerMetrics } from '../metrics/indexer.js'
import { createRangeQueue, type RangeQueue } from '../pipeline/queue.js'
import { createCodeResolver } from '../pipeline/resolve.js'
import { createFinality } from '../pipeline/finality.js'
import { createRangeWorker, type RangeWorker, type WorkerChain } from '../pipeline/worker.js'
import { createThreadedIndexStore, type ThreadedIndexStore } from '../store/threaded-store.js'
import { createRedis, type Redis } from '../redis/client.js'
import { createRegistry } from '../registry/register.js'
import { publishEndpointStates, PUBLISH_EVERY_MS, readEndpointStates } from '../indexer-status/endpoints.js'
import { createRpc, type Rpc } from '../rpc/client.js'
import { redactRpcUrl } from '../rpc/endpoints/endpoint-redact.js'
import { errorCode, StartupError } from './startup.js'
import { expectLargeHeap, LARGE_BACKLOG_ROWS } from './heap-growth.js'

/** How long a shutdown waits for a follower to finish its current step. */
const FOLLOWER_STOP_GRACE_MS = 500
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref())

export type ResolvedChain = Omit<ChainConfig, 'chainId'> & { chainId: number }

/** Fills in chain ids read from the nodes and refuses a node that serves another chain than configured. */
export async function resolveChains(chains: readonly ChainConfig[], rpcFor: (chain: ChainConfig) => Rpc): Promise<ResolvedChain[]> {
  return Promise.all(
    chains.map(async (chain) => {
      const nodeChainId = await rpcFor(chain)
        .chainId()
        .catch((error: unknown) => {
          throw new StartupError(`could not read the chain id from the RPC at ${rpcUrlsOf(chain).map(redactRpcUrl).join(', ')} (${errorCode(error)}): ${(error as Error).message.split('\n')[0]}`)
        })
      if (chain.chainId !== undefined && chain.chainId !== nodeChainId) {
        throw new StartupError(`the RPC at ${redactRpcUrl(chain.rpcUrl)} serves chain ${nodeChainId}, but chain ${chain.chainId} is configured for it`)
      }
      // an endpoint of another chain among a chain's endpoints would mix two chains' blocks into one index;
      // one that does not answer now is checked by its probe before it gets work
      await rpcFor(chain)
        .requireChainId(chain.chainId ?? nodeChainId)
        .catch((error: Error) => {
          throw new StartupError(error.message)
        })
      return { ...chain, chainId: nodeChainId }
    }),
  )
}

export type IndexerRoles = { follower: boolean; worker: boolean }

export type StartIndexerOptions = {
  config: Config
  chains: readonly ChainConfig[]
  db: Database
  roles: IndexerRoles
  logger: Logger
  metricsRegistry: MetricsRegistry
}

export type RunningIndexer = {
  chains: ResolvedChain[]
  queue: RangeQueue
  metrics: IndexerMetrics
  stop(): Promise<void>
}

/**
 * Starts the follower of every configured chain and/or the range workers in
 * this process, over one Redis queue and one Postgres database.
 */
export async function startIndexer(options: StartIndexerOptions): Promise<RunningIndexer> {
  const { config, db, roles, logger } = options
  const metrics = createIndexerMetrics(options.metricsRegistry)
  const rpcs = new Map<string, Rpc>()
  const rpcFor = (chain: Pick<ChainConfig, 'rpcUrl' | 'rpcUrls'>) => {
    const urls = rpcUrlsOf(chain)
    const key = urls.join(',')
    let rpc = rpcs.get(key)
    if (!rpc) {
      rpc = createRpc({
        urls,
        timeoutMs: config.RPC_TIMEOUT_MS,
        batchSize: config.RPC_BATCH_SIZE,
        batchBytes: config.RPC_BATCH_BYTES,
        answerBytes: config.RPC_MAX_ANSWER_BYTES,
        concurrency: config.RPC_CONCURRENCY ?? Math.ceil(config.RPC_MAX_CONCURRENCY / 2),
        maxConcurrency: config.RPC_MAX_CONCURRENCY,
        maxAttempts: config.RPC_MAX_ATTEMPTS,
        httpClient: config.RPC_HTTP_CLIENT,
        // labelled by the redacted URL: never a key in a metric label or a log line
        observer: (endpoint) => {
          const transportMetrics = metrics.rpcTransport(endpoint)
          let settledAt = ''
          return {
            ...transportMetrics,
            limitLearned: (message, details) => logger.info({ component: 'rpc', endpoint, ...details }, message),
            operatingPoint: (report) => {
              transportMetrics.operatingPoint(report)
              // one line each time the search settles on another point (it re-probes quietly afterwards)
              const point = `${report.batch}x${report.inFlight}`
              const settling = report.settled && point !== settledAt
              if (report.settled) settledAt = point
              logger.debug({ component: 'rpc', endpoint, batch: report.batch, in_flight: report.inFlight, settled: report.settled, mib_per_s: Number((report.bytesPerSecond / 2 ** 20).toFixed(1)) }, 'rpc operating point moved')
              if (settling) logger.info({ component: 'rpc', endpoint, batch: report.batch, in_flight: report.inFlight, calls_per_s: Math.round(report.callsPerSecond), mib_per_s: Number((report.bytesPerSecond / 2 ** 20).toFixed(1)) }, 'rpc operating point')
            },
            response: (status) => {
              if (status >= 300) metrics.rpcResponse(status)
            },
          }
        },
        onEndpointState: (endpoint, state) =>
          state === 'sick'
            ? logger.warn({ component: 'rpc', endpoint }, 'RPC endpoint failing: routing around it until a probe answers')
            : state === 'healthy' && logger.info({ component: 'rpc', endpoint }, 'RPC endpoint answers again: back in rotation'),
      })
      metrics.rpcEndpoints(rpc.endpointStates)
      rpcs.set(key, rpc)
    }
    return rpc
  }
  const chains = await resolveChains(options.chains, rpcFor)
  for (const chain of chains) {
    logger.info({ chain_id: chain.chainId, rpc: rpcUrlsOf(chain).map(redactRpcUrl), start_block: chain.startBlock, confirmations: chain.confirmations, entry_points: chain.entryPoints }, 'indexing chain')
  }

  const connections: Redis[] = []
  const queueConnection = createRedis(config.REDIS_URL, 'queue')
  connections.push(queueConnection)
  const queue = createRangeQueue(queueConnection, config.QUEUE_PREFIX, config.STUCK_RANGE_ATTEMPTS)
  // Redis outages surface as failed calls in the follower's loop; the emitter must not crash the process
  queue.on('error', (error) => logger.debug({ err: error.message }, 'range queue connection error'))

  // every few seconds, this process's view of the endpoints for /v1/indexer/status (which may be another process)
  const publishEndpoints = () =>
    Promise.all(chains.map((chain) => publishEndpointStates(queueConnection, config.QUEUE_PREFIX, chain.chainId, rpcFor(chain).endpointStates()))).catch(
      (error: Error) => logger.debug({ err: error.message }, 'could not publish the RPC endpoints state'),
    )
  void publishEndpoints()
  const endpointsTimer = setInterval(publishEndpoints, PUBLISH_EVERY_MS).unref()

  const followers: Follower[] = []
  if (roles.follower) {
    for (const chain of chains) await verifyChainIdentity({ db, rpc: rpcFor(chain), chain, logger })
    for (const chain of chains) {
      const follower = createFollower({
        chain,
        rpc: rpcFor(chain),
        db,
        databaseUrl: config.DATABASE_URL,
        queue,
        rangeSize: config.RANGE_SIZE,
        maxPendingRanges: config.MAX_PENDING_RANGES,
        logger,
        metrics,
        // the workers may be other processes: what they published, else this process's own view
        endpoints: async () => {
          const published = (await readEndpointStates(queueConnection, config.QUEUE_PREFIX, [chain.chainId])).get(chain.chainId) ?? []
          return published.length > 0 ? published : rpcFor(chain).endpointStates()
        },
      })
      follower.start()
      followers.push(follower)
    }
  }

  let worker: RangeWorker | undefined
  let commitStore: ThreadedIndexStore | undefined
  if (roles.worker) {
    const workerChains = new Map<number, WorkerChain>(
      chains.map((chain) => {
        const rpc = rpcFor(chain)
        // the devnet is a new chain at every start, its index reset by a rollback of everything (follower/identity.ts),
        // which rows committed as final would outlive: it is indexed by the tip path alone
        const finality = chain.devnet ? undefined : createFinality({ rpc, depth: chain.finalityDepth })
        return [chain.chainId, { chainId: chain.chainId, rpc, entryPoints: entryPointSet(chain.entryPoints), ...(finality && { finality }) }]
      }),
    )
    const workerConnection = createRedis(config.REDIS_URL, 'queue')
    connections.push(workerConnection)
    commitStore = createThreadedIndexStore({ databaseUrl: config.DATABASE_URL })
    worker = createRangeWorker({
      db,
      connection: workerConnection,
      prefix: config.QUEUE_PREFIX,
      concurrency: config.WORKER_CONCURRENCY,
      rangeSize: config.RANGE_SIZE,
      maxRangeRows: config.MAX_RANGE_ROWS,
      rowsInFlight: config.ROWS_IN_FLIGHT,
      // a dense backfill's rows: the heap's growth is bounded before a collection shows them (heap-growth.ts)
      largeBacklog: { rows: LARGE_BACKLOG_ROWS, reached: expectLargeHeap },
      queue,
      lockMs: config.JOB_LOCK_MS,
      stuckAfter: config.STUCK_RANGE_ATTEMPTS,
      chains: workerChains,
      resolver: createCodeResolver({ registry: createRegistry({ db }) }),
      logger,
      metrics,
      store: commitStore,
    })
  }

  return {
    chains,
    queue,
    metrics,
    async stop() {
      // a follower mid-call to a slow node is not waited for: it only reads and enqueues, and its chain
      // lock (a Postgres session) is released when the process exits
      clearInterval(endpointsTimer)
      const followersStopped = Promise.all(followers.map((follower) => follower.stop()))
      if (worker) {
        // ranges in progress go back to the queue now, for another worker, instead of holding the
        // shutdown for their RPC calls or blocking other workers until their lock expires
        const released = await worker.releaseActiveRanges()
        if (released > 0) logger.info({ ranges: released }, 'released the ranges in progress to other workers')
        await worker.close(true)
      }
      await commitStore?.close()
      await Promise.race([followersStopped, sleep(FOLLOWER_STOP_GRACE_MS)])
      await queue.close()
      for (const connection of connections) connection.disconnect()
    },
  }
}
