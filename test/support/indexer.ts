import { Registry as MetricsRegistry } from 'prom-client'
import type { ChainConfig } from '../../src/config/chains.js'
import { loadConfig, type Config } from '../../src/config/env.js'
import type { Database } from '../../src/db/client.js'
import { indexedThrough } from '../../src/store/ranges.js'
import { startIndexer, type IndexerRoles, type RunningIndexer } from '../../src/bin/indexer.js'
import { createLogger } from '../../src/logger.js'
import { until } from './poll.js'

/** Environment for an indexer under test: its own database and Redis prefix, quick polling. */
export function indexerEnv(options: { databaseUrl: string; redisUrl: string; prefix: string; extra?: Record<string, string> }): Record<string, string> {
  return {
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    QUEUE_PREFIX: options.prefix,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DEVNET: 'false',
    POLL_INTERVAL_MS: '100',
    CONFIRMATIONS: '0',
    RANGE_SIZE: '5',
    WORKER_CONCURRENCY: '2',
    ...options.extra,
  }
}

/** Follower and/or workers in this process, for tests. */
export async function startTestIndexer(options: {
  db: Database
  env: Record<string, string>
  chains: ChainConfig[]
  roles?: IndexerRoles
  metricsRegistry?: MetricsRegistry
}): Promise<RunningIndexer & { config: Config }> {
  const config = loadConfig(options.env)
  const running = await startIndexer({
    config,
    chains: options.chains,
    db: options.db,
    roles: options.roles ?? { follower: true, worker: true },
    logger: createLogger({ level: config.LOG_LEVEL, name: 'test-indexer' }),
    metricsRegistry: options.metricsRegistry ?? new MetricsRegistry(),
  })
  return { ...running, config }
}

/** Chain settings for an anvil node under test: from block 0, no confirmations, quick polling. */
export function anvilChain(rpcUrl: string, overrides: Partial<ChainConfig> = {}): ChainConfig {
  const config = loadConfig({ RPC_URL: rpcUrl, CONFIRMATIONS: '0', POLL_INTERVAL_MS: '100' })
  return { ...config.chains[0]!, ...overrides }
}

/** Waits until every block up to `block` is indexed. */
export async function waitForIndexed(db: Database, chainId: number, block: number, timeoutMs = 60_000): Promise<void> {
  const through = () => indexedThrough(db.$client, chainId)
  await until(`chain ${chainId} indexed through ${block}`, async () => ((await through()) ?? -1) >= block, {
    timeoutMs,
    describe: async () => `indexed through ${await through()}`,
  })
}

export type CodeTotals = { transactions: number; userOperations: number; reverted: number; suffixGas: number }

/** Per-code totals as the index holds them, in the ground truth's shape. */
export async function totalsFromIndex(db: Database, chainId?: number): Promise<Record<string, CodeTotals>> {
  const rows = await db.$client<{ code: string; kind: string; success: string; reverted: string; gas: string }[]>`
    select code, kind, sum(success_count) as success, sum(reverted_count) as reverted, sum(suffix_gas) as gas
    from code_daily_totals
    where ${chainId === undefined ? db.$client`true` : db.$client`chain_id = ${chainId}`}
    group by code, kind`
  const totals: Record<string, CodeTotals> = {}
  for (const row of rows) {
    const entry = (totals[row.code] ??= { transactions: 0, userOperations: 0, reverted: 0, suffixGas: 0 })
    if (row.kind === 'transaction') entry.transactions += Number(row.success)
    else entry.userOperations += Number(row.success)
    entry.reverted += Number(row.reverted)
    entry.suffixGas += Number(row.gas)
  }
  for (const [code, entry] of Object.entries(totals)) {
    if (entry.transactions === 0 && entry.userOperations === 0 && entry.reverted === 0 && entry.suffixGas === 0) delete totals[code]
  }
  return totals
}

export type IndexedRow = { txHash: string; userOpIndex: number; code: string; kind: string; status: string }

/** Attribution rows as the index holds them, sorted, for exact comparison with ground truth. */
export async function rowsFromIndex(db: Database, chainId: number): Promise<IndexedRow[]> {
  const rows = await db.$client<{ tx_hash: string; user_op_index: number; code: string; kind: string; status: string }[]>`
    select tx_hash, user_op_index, code, kind, status from attributions where chain_id = ${chainId}
    order by tx_hash, user_op_index, code`
  return rows.map((r) => ({ txHash: r.tx_hash, userOpIndex: r.user_op_index, code: r.code, kind: r.kind, status: r.status }))
}

/** Rows of a ground truth in the index's sorted shape. */
export function rowsFromTruth(truth: { attributions: Array<{ txHash: string; userOpIndex: number; code: string; kind: string; status: string }> }): IndexedRow[] {
  return truth.attributions
    .map((r) => ({ txHash: r.txHash.toLowerCase(), userOpIndex: r.userOpIndex, code: r.code, kind: r.kind, status: r.status }))
    .sort((a, b) => (a.txHash < b.txHash ? -1 : a.txHash > b.txHash ? 1 : a.userOpIndex - b.userOpIndex || (a.code < b.code ? -1 : a.code > b.code ? 1 : 0)))
}

/** Malformed suffixes the index counted, as `txHash:userOpIndex`, sorted. */
export async function malformedFromIndex(db: Database, chainId: number): Promise<string[]> {
  const rows = await db.$client<{ tx_hash: string; user_op_index: number }[]>`
    select tx_hash, user_op_index from malformed_suffixes where chain_id = ${chainId}`
  return rows.map((r) => `${r.tx_hash}:${r.user_op_index}`).sort()
}

export function malformedFromTruth(truth: { malformed: Array<{ txHash: string; userOpIndex: number }> }): string[] {
  return truth.malformed.map((r) => `${r.txHash.toLowerCase()}:${r.userOpIndex}`).sort()
}

/** Waits until the index holds block `number` with exactly this hash (the node's branch, after a reorg). */
export async function waitForIndexedBlock(db: Database, chainId: number, number: number, hash: string, timeoutMs = 60_000): Promise<void> {
  const indexed = async () => {
    const through = await indexedThrough(db.$client, chainId)
    const [row] = await db.$client<{ hash: string }[]>`select hash from blocks where chain_id = ${chainId} and number = ${number}`
    return { through, hash: row?.hash }
  }
  await until(`block ${number} ${hash} indexed`, async () => {
    const state = await indexed()
    return state.through !== undefined && state.through >= number && state.hash === hash.toLowerCase()
  }, { timeoutMs, describe: async () => JSON.stringify(await indexed()) })
}

/**
 * Runs follower and workers in this process until `chainId` is indexed
 * through `head`, then stops them: how tests fill an index from real traffic.
 */
export async function indexThrough(options: {
  database: { db: Database; url: string }
  redis: { url: string; prefix: string }
  chains: ChainConfig[]
  chainId: number
  head: number
  extra?: Record<string, string>
  metricsRegistry?: MetricsRegistry
}): Promise<void> {
  const indexer = await startTestIndexer({
    db: options.database.db,
    env: indexerEnv({ databaseUrl: options.database.url, redisUrl: options.redis.url, prefix: options.redis.prefix, extra: options.extra }),
    chains: options.chains,
    ...(options.metricsRegistry && { metricsRegistry: options.metricsRegistry }),
  })
  try {
    await waitForIndexed(options.database.db, options.chainId, options.head)
  } finally {
    await indexer.stop()
  }
}
