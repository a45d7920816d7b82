import { Registry as MetricsRegistry } from 'prom-client'
import { expect, it } from 'vitest'
import { startAnvil } from '../../devnet/anvil.js'
import { createDevnetClient } from '../../devnet/client.js'
import { appendTruth, emptyTruth } from '../../devnet/ledger.js'
import { request, startTestApi } from '../support/api.js'
import { sendMixedTraffic } from '../support/chain.js'
import { useChainServices } from '../support/fixtures.js'
import { expectIndexExact, expectNothingHalfCommitted, finalThroughOf, readyRollingWindows } from '../support/final-exact.js'
import { startTestIndexer, indexerEnv, waitForIndexedBlock, totalsFromIndex } from '../support/indexer.js'
import { startForwarder } from '../support/json-rpc-forwarder.js'
import { until } from '../support/poll.js'

/**
 * A refused reorg is over when the node agrees with the index again
 * (follower/reconcile.ts). The indexer reads the chain through a JSON-RPC
 * front; after a backfill across the boundary (bulk below, tip above), the
 * front switches to another node of the same chain (the same genesis) that
 * serves another, longer branch from block 1: below the final blocks, so
 * the follower refuses it (/readyz 503, the gauge 1, chain_state records
 * it, nothing rolled back), and again after a restart (the state kept in
 * the database). The front switches back: /readyz is 200 again,
 * the gauge 0, the state cleared, and new traffic is indexed by the tip
 * path, exactly.
 */
const services = useChainServices('final_recovers')

const refusedGauge = async (metrics: MetricsRegistry, chainId: number) => {
  const text = await metrics.getSingleMetricAsString('indexer_reorg_refused')
  const match = new RegExp(`indexer_reorg_refused\\{chain_id="${chainId}"\\} (\\d+)`).exec(text)
  return match ? Number(match[1]) : undefined
}

it('a refused deep reorg clears when the node agrees again: /readyz 200, gauge 0, state cleared, indexing resumes exact', async () => {
  const { chain, database, redis } = services
  const sql = database.db.$client
  await readyRollingWindows(database.db)
  const truth = emptyTruth()
  appendTruth(truth, await sendMixedTraffic(chain, { transactions: 200, blocks: 90 }))
  const head = await chain.client.getBlock()

  // another node of the same chain: the same genesis (chain id, accounts, timestamp), its own branch from block 1
  const genesis = await chain.client.getBlock({ blockNumber: 0n })
  const other = await startAnvil({ chainId: chain.chainId, args: ['--timestamp', String(genesis.timestamp)] })
  const front = await startForwarder({ target: chain.rpcUrl })
  let metrics = new MetricsRegistry()
  const env = indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix, extra: { RANGE_SIZE: '5' } })
  const startIndexer = () => startTestIndexer({ db: database.db, env, chains: [{ ...chain.config, rpcUrl: front.url }], metricsRegistry: metrics })
  let indexer = await startIndexer()
  const api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: redis.url })
  try {
    const otherClient = createDevnetClient({ rpcUrl: other.rpcUrl, chainId: chain.chainId })
    expect((await otherClient.getBlock({ blockNumber: 0n })).hash).toBe(genesis.hash)
    await otherClient.mine({ blocks: Number(head.number) + 10 })

    await waitForIndexedBlock(database.db, chain.chainId, Number(head.number), head.hash!)
    await expectIndexExact(database.db, chain, truth)
    const final = (await finalThroughOf(database.db, chain.chainId))!
    expect(final).toBeGreaterThan(Number(head.number) - 64 - 5)
    expect((await request(`${api.url}/readyz`)).status).toBe(200)
    const before = await totalsFromIndex(database.db, chain.chainId)

    // the node serves the other branch: refused
    front.setTarget(other.rpcUrl)
    const refused = await until('/readyz to report the refused reorg', async () => {
      const answer = await request(`${api.url}/readyz`)
      return answer.status === 503 && answer.body.refused_reorgs?.length > 0 && answer.body
    })
    expect(refused.refused_reorgs).toEqual([{ chain_id: chain.chainId, rollback_to: expect.any(Number), final_through: final, since: expect.any(String) }])
    expect(await refusedGauge(metrics, chain.chainId)).toBe(1)
    const [state] = await sql<{ refused_rollback_to: number | null }[]>`select refused_rollback_to::float8 as refused_rollback_to from chain_state where chain_id = ${chain.chainId}`
    expect(state!.refused_rollback_to).toBeLessThan(final)
    expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(before)

    // a restart while refused: the state outlives the process (an operator sees it), the new follower refuses again
    await indexer.stop()
    expect((await request(`${api.url}/readyz`)).status).toBe(503)
    metrics = new MetricsRegistry()
    indexer = await startIndexer()
    await until('the restarted follower to refuse the reorg', async () => (await refusedGauge(metrics, chain.chainId)) === 1)
    expect((await request(`${api.url}/readyz`)).body.refused_reorgs).toEqual(refused.refused_reorgs)
    expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(before)

    // the node agrees with the index again
    front.setTarget(chain.rpcUrl)
    await until('/readyz to be ready again', async () => (await request(`${api.url}/readyz`)).status === 200)
    expect(await refusedGauge(metrics, chain.chainId)).toBe(0)
    const [cleared] = await sql`select refused_rollback_to, refused_since from chain_state where chain_id = ${chain.chainId}`
    expect(cleared).toEqual({ refused_rollback_to: null, refused_since: null })

    // indexing resumes: new blocks at the tip, by the tip path (the other node's longer branch moved no boundary)
    appendTruth(truth, await sendMixedTraffic(chain, { transactions: 40, blocks: 12 }))
    const newHead = await chain.client.getBlock()
    await waitForIndexedBlock(database.db, chain.chainId, Number(newHead.number), newHead.hash!)
    await expectNothingHalfCommitted(database.db, chain.chainId)
    await expectIndexExact(database.db, chain, truth)
    expect(await finalThroughOf(database.db, chain.chainId)).toBeLessThanOrEqual(Number(newHead.number) - 64)
  } finally {
    await api.close()
    await indexer.stop()
    await front.close()
    await other.stop()
  }
}, 240_000)
