import { afterAll, beforeAll, expect, it } from 'vitest'
import type { GroundTruth } from '../../devnet/ledger.js'
import { sendMixedTraffic } from '../support/chain.js'
import { expectIndexMatchesTruth, useChainServices } from '../support/fixtures.js'
import { indexerEnv, startTestIndexer, waitForIndexed } from '../support/indexer.js'
import { rotatingFaults, startRpcProxy, type RpcProxy } from '../support/rpc-proxy.js'

const services = useChainServices('rpcfaults')
let proxy: RpcProxy
let truth: GroundTruth

beforeAll(async () => {
  truth = await sendMixedTraffic(services.chain, { transactions: 200, blocks: 50 })
  proxy = await startRpcProxy({ target: services.chain.rpcUrl, hangMs: 1_500 })
}, 120_000)

afterAll(async () => {
  await proxy?.close()
})

it('indexes exactly through 429s, 5xx, timeouts, truncated bodies and dropped connections', async () => {
  const { chain, database, redis } = services
  proxy.setFault(rotatingFaults(3, ['429', '500', '503', 'timeout', 'truncated', 'reset']))
  const head = Number(await chain.client.getBlockNumber())
  const indexer = await startTestIndexer({
    db: database.db,
    env: indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix, extra: { RPC_TIMEOUT_MS: '500', RANGE_SIZE: '4' } }),
    chains: [{ ...chain.config, rpcUrl: proxy.url }],
  })
  try {
    await waitForIndexed(database.db, chain.chainId, head, 180_000)
  } finally {
    await indexer.stop()
  }
  for (const fault of ['429', '500', '503', 'timeout', 'truncated', 'reset'] as const) expect(proxy.counts[fault]).toBeGreaterThan(0)
  await expectIndexMatchesTruth(database.db, chain.chainId, truth)
  const [blocks] = await database.db.$client<{ n: number }[]>`select count(distinct number)::int as n from blocks where chain_id = ${chain.chainId}`
  expect(blocks!.n).toBe(head + 1)
})
