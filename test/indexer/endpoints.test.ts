import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { Registry } from 'prom-client'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { openChain, type Chain } from '../../bench/chain/files.js'
import { defaultChainParams, generateChain } from '../../bench/chain/generate.js'
import { startReplayProcess, type ReplayProcess } from '../../bench/chain/replay-process.js'
import { totalsByCode, type ExpectedIndex } from '../../devnet/ledger.js'
import { startIndexer } from '../../src/bin/indexer.js'
import { defaultEntryPoints, type ChainConfig } from '../../src/config/chains.js'
import { loadConfig } from '../../src/config/env.js'
import { createLogger } from '../../src/logger.js'
import { PUBLISH_EVERY_MS, readEndpointStates } from '../../src/indexer-status/endpoints.js'
import { readIndexerStatus } from '../../src/indexer-status/status.js'
import { indexedThrough } from '../../src/store/ranges.js'
import { indexerEnv, rowsFromIndex, rowsFromTruth, totalsFromIndex, waitForIndexed } from '../support/indexer.js'
import { startForwarder, type Forwarder } from '../support/json-rpc-forwarder.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { until } from '../support/poll.js'

/**
 * Several RPC endpoints per chain (issue 24.3), each a replay node in its own
 * process behind a front that keeps its URL while the node behind it is
 * killed and started again.
 */

const params = { ...defaultChainParams, attributedRate: 0.2, blocks: 60, txPerBlock: 40, seed: 2403 }
let dir: string
let chain: Chain
let expected: ExpectedIndex
let redis: TestRedis
const databases: TestDatabase[] = []
const nodes: ReplayProcess[] = []
const fronts: Forwarder[] = []

beforeAll(async () => {
  dir = mkdtempSync(`${tmpdir()}/chain-endpoints-`)
  generateChain(params, dir)
  chain = openChain(dir)
  expected = chain.expectedIndex()
  redis = await createTestRedis()
}, 120_000)

afterAll(async () => {
  for (const front of fronts) await front.close()
  for (const node of nodes) await node.stop()
  chain?.close()
  rmSync(dir, { recursive: true, force: true })
  for (const database of databases) await database.drop()
  await redis?.cleanup()
})

async function node(options: { head?: number; rate?: number }) {
  const started = await startReplayProcess({ dir, ...options })
  nodes.push(started)
  return started
}

async function front(target: string) {
  const started = await startForwarder({ target })
  fronts.push(started)
  return started
}

async function startIndexing(name: string, rpcUrls: string[]) {
  const database = await createTestDatabase(name)
  databases.push(database)
  const config = loadConfig(indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: `${redis.prefix}${name}:`, extra: { RANGE_SIZE: '2' } }))
  const registry = new Registry()
  const chainConfig: ChainConfig = { chainId: params.chainId, rpcUrl: rpcUrls[0]!, rpcUrls, wsUrl: undefined, startBlock: 0, confirmations: 0, finalityDepth: 64, pollIntervalMs: 100, entryPoints: [...defaultEntryPoints] }
  const indexer = await startIndexer({
    config,
    chains: [chainConfig],
    db: database.db,
    roles: { follower: true, worker: true },
    logger: createLogger({ level: config.LOG_LEVEL, name: 'test-indexer' }),
    metricsRegistry: registry,
  })
  return { database, indexer, registry }
}

async function expectExactIndex(database: TestDatabase) {
  expect(await rowsFromIndex(database.db, params.chainId)).toEqual(rowsFromTruth(expected))
  expect(await totalsFromIndex(database.db, params.chainId)).toEqual(totalsByCode(expected))
  const [blocks] = await database.db.$client<{ n: number }[]>`select count(distinct number)::int as n from blocks where chain_id = ${params.chainId}`
  expect(blocks!.n).toBe(chain.lastBlock + 1)
  const [stuck] = await database.db.$client<{ n: number }[]>`select count(*)::int as n from ranges where chain_id = ${params.chainId} and attempts >= 5`
  expect(stuck!.n).toBe(0)
}

const metricValue = async (registry: Registry, name: string) => (await registry.getSingleMetricAsString(name))

it('indexes exactly when one of two endpoints is killed mid-backfill and comes back: no range stuck, the endpoint back in rotation', async () => {
  // a live chain: both nodes release blocks as time passes, so the backfill lasts long enough to lose a node in it
  const [a, b] = await Promise.all([node({ head: 8, rate: 5 }), node({ head: 8, rate: 5 })])
  const [frontA, frontB] = await Promise.all([front(a.url), front(b.url)])
  const { database, indexer, registry } = await startIndexing('killed', [frontA.url, frontB.url])
  try {
    // mid-backfill: some ranges done, most to come
    await until('block 12 indexed', async () => ((await indexedThrough(database.db.$client, params.chainId)) ?? -1) >= 12)
    await b.stop()
    const callsWhenKilled = { ...frontB.methodCalls }
    // the pool noticed: a work failed on B and moved to A, or B is routed around (a positive signal, not a fixed wait)
    const bNoticed = async () =>
      new RegExp(`endpoint="${frontB.url}"} [1-9]`).test(await metricValue(registry, 'indexer_rpc_endpoint_failed_works')) ||
      new RegExp(`endpoint="${frontB.url}"} 0`).test(await metricValue(registry, 'indexer_rpc_endpoint_healthy'))
    await until('the pool to notice the dead endpoint', bNoticed, { timeoutMs: 60_000 })
    const { baseHead, rate } = (await a.stats()).release
    const revived = await node({ head: Math.min(chain.lastBlock, baseHead + Math.floor(((Date.now() - (await a.stats()).release.baseAt) * rate) / 1000)), rate })
    frontB.setTarget(revived.url)
    await waitForIndexed(database.db, params.chainId, chain.lastBlock, 120_000)
    await expectExactIndex(database)
    // the revived endpoint got block work again after its probe answered
    expect(frontB.methodCalls.eth_getBlockByNumber ?? 0).toBeGreaterThan(callsWhenKilled.eth_getBlockByNumber ?? 0)
    // and is healthy: a probe may still be on its way when the backfill ends (the wait ends on the positive signal)
    await until('the revived endpoint healthy', async () => new RegExp(`endpoint="${frontB.url}"} 1`).test(await metricValue(registry, 'indexer_rpc_endpoint_healthy')), { timeoutMs: 60_000 })
  } finally {
    await indexer.stop()
  }
}, 180_000)

it('does not take an endpoint that is merely behind for a reorg; shows both endpoints, keys redacted, in metrics and status', async () => {
  const [ahead, behind] = await Promise.all([node({}), node({ head: chain.lastBlock - 20 })])
  const [frontAhead, frontBehind] = await Promise.all([front(ahead.url), front(behind.url)])
  // URLs the way providers hand them out: the key in the path (the front ignores the path)
  const KEY = 'Zq81LmNo0pQrStUvWxYz'
  const [aheadUrl, behindUrl] = [`${frontAhead.url}/v2/${KEY}`, `${frontBehind.url}/v2/${KEY}`]
  // the lagging endpoint first: it is asked as much as the other
  const { database, indexer, registry } = await startIndexing('lagging', [behindUrl, aheadUrl])
  try {
    await waitForIndexed(database.db, params.chainId, chain.lastBlock, 120_000)
    await expectExactIndex(database)
    expect(frontBehind.methodCalls.eth_getBlockByNumber ?? 0).toBeGreaterThan(0)
    expect(await metricValue(registry, 'indexer_reorg_depth_blocks')).not.toMatch(/indexer_reorg_depth_blocks_count\{[^}]*\} [1-9]/)
    // the endpoint behind was asked for blocks it lacks, and the work moved on
    expect(await metricValue(registry, 'indexer_rpc_endpoint_failed_works')).toContain(`endpoint="${frontBehind.url}/v2/***"} `)
    expect(await metricValue(registry, 'indexer_rpc_endpoint_failed_works')).not.toContain(`endpoint="${frontBehind.url}/v2/***"} 0`)
    // lag is not sickness: the endpoint behind stays in rotation
    expect(await metricValue(registry, 'indexer_rpc_endpoint_healthy')).toContain(`endpoint="${frontBehind.url}/v2/***"} 1`)
    expect(await registry.metrics()).not.toContain(KEY)
    // what /v1/indexer/status shows: both endpoints, healthy, measured, keys redacted
    const readStatus = async () =>
      readIndexerStatus(database.db.$client, {
        chainIds: [params.chainId],
        stuckAfterAttempts: 5,
        endpoints: await readEndpointStates(redis.redis, `${redis.prefix}lagging:`, [params.chainId]),
      })
    // published every PUBLISH_EVERY_MS: wait for a view of both endpoints that has measured work on each
    const status = await until('both endpoints published with work done', async () => {
      const read = await readStatus()
      const shown = read.chains[0]?.endpoints ?? []
      return shown.length === 2 && shown.every((endpoint) => endpoint.items > 0) && read
    }, { timeoutMs: 4 * PUBLISH_EVERY_MS })
    const endpoints = status.chains[0]!.endpoints!
    expect(endpoints.map((endpoint) => [endpoint.url, endpoint.state])).toEqual([
      [`${frontAhead.url}/v2/***`, 'healthy'],
      [`${frontBehind.url}/v2/***`, 'healthy'],
    ].sort((a, b) => a[0]!.localeCompare(b[0]!)))
    for (const endpoint of endpoints) expect(endpoint.items).toBeGreaterThan(0)
    expect(JSON.stringify(status)).not.toContain(KEY)
  } finally {
    await indexer.stop()
  }
}, 180_000)
