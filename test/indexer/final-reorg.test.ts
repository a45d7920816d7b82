import { Registry as MetricsRegistry } from 'prom-client'
import { expect, it } from 'vitest'
import { sendMixedTraffic } from '../support/chain.js'
import { request, startTestApi } from '../support/api.js'
import { expectIndexMatchesTruth, useChainServices } from '../support/fixtures.js'
import { indexerEnv, startTestIndexer, totalsFromIndex, waitForIndexedBlock } from '../support/indexer.js'
import { until } from '../support/poll.js'

/**
 * A backfill crosses the finality boundary (anvil answers `finalized` 64
 * blocks behind its head): the ranges below it are committed in bulk, the
 * rest by the tip path, and the index is exact. Then the node switches to a
 * branch that forks below the blocks committed as final: the follower
 * refuses the reorg — nothing rolled back, nothing of the new branch
 * indexed — and says so in /readyz (503), a metric and an error line, for
 * an operator to act on.
 */
const services = useChainServices('final_reorg')

it('a backfill across the boundary is exact; a reorg below the final blocks is refused, nothing half-applied', async () => {
  const { chain, database, redis } = services
  const forkPoint = await chain.snapshot()
  const truth = await sendMixedTraffic(chain, { transactions: 240, blocks: 90 })
  const head = await chain.client.getBlock()
  const metricsRegistry = new MetricsRegistry()
  const env = indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix, extra: { RANGE_SIZE: '5' } })
  const indexer = await startTestIndexer({ db: database.db, env, chains: [chain.config], metricsRegistry })
  const api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: redis.url })
  try {
    await waitForIndexedBlock(database.db, chain.chainId, Number(head.number), head.hash!)
    await expectIndexMatchesTruth(database.db, chain.chainId, truth)
    const [state] = await database.db.$client<{ final_through: number | null }[]>`select final_through::float8 as final_through from chain_finality where chain_id = ${chain.chainId}`
    // the ranges at or below head - 64 went the bulk way
    expect(state?.final_through).toBeGreaterThanOrEqual(Number(head.number) - 64 - 5)
    const before = await totalsFromIndex(database.db, chain.chainId)
    expect((await request(`${api.url}/readyz`)).status).toBe(200)

    // another branch from below every final block, longer than ours
    await chain.revert(forkPoint)
    await sendMixedTraffic(chain, { transactions: 40, blocks: 100 })
    const ready = await until('/readyz to report the refused reorg', async () => {
      const answer = await request(`${api.url}/readyz`)
      return answer.status === 503 && answer.body
    }, { timeoutMs: 60_000 })
    expect(ready.refused_reorgs).toEqual([
      { chain_id: chain.chainId, rollback_to: expect.any(Number), final_through: state!.final_through, since: expect.any(String) },
    ])
    expect(ready.refused_reorgs[0].rollback_to).toBeLessThan(state!.final_through!)
    expect(await metricsRegistry.getSingleMetricAsString('indexer_reorg_refused')).toMatch(new RegExp(`indexer_reorg_refused\\{chain_id="${chain.chainId}"\\} 1`))
    // nothing rolled back, nothing of the new branch indexed: the index is still the old branch's, exactly
    expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(before)
    await expectIndexMatchesTruth(database.db, chain.chainId, truth)
  } finally {
    await api.close()
    await indexer.stop()
  }
}, 240_000)
