import { expect, it } from 'vitest'
import { appendTruth, emptyTruth, totalsByCode } from '../../devnet/ledger.js'
import { sendMixedTraffic } from '../support/chain.js'
import { useChainServices } from '../support/fixtures.js'
import { DAY_MS, HOUR_MS } from '../../src/store/buckets.js'
import { expectAggregatesMatchRows, expectIndexExact, expectNothingHalfCommitted, finalThroughOf, readyRollingWindows } from '../support/final-exact.js'
import { indexerEnv, startTestIndexer, totalsFromIndex, waitForIndexedBlock } from '../support/indexer.js'

/**
 * Reorgs in the tip after bulk commits below it. A backfill across anvil's
 * finalized block (64 behind its head) commits the blocks below in bulk;
 * then, live, branches above the final blocks are indexed and orphaned:
 * a shallow one, and one whose orphaned rows share codes, senders and the
 * day with the final rows below (their sender members held by both). Each
 * is rolled back to the common ancestor and the new branch indexed; the
 * final rows stay, nothing is refused, and the index is exact: rows,
 * totals, senders against the chain, distinct senders counted once, every
 * window — and every window again as time moves on by an hour, days and
 * past the longest window.
 */
const services = useChainServices('final_tip_reorg')

it('a reorg in the tip after bulk commits below it: rolled back above the final blocks, exact', async () => {
  const { chain, database, redis } = services
  await readyRollingWindows(database.db)
  const canonical = emptyTruth()
  appendTruth(canonical, await sendMixedTraffic(chain, { transactions: 200, blocks: 100 }))
  const head = await chain.client.getBlock()
  const env = indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix, extra: { RANGE_SIZE: '5' } })
  const indexer = await startTestIndexer({ db: database.db, env, chains: [chain.config] })
  const waitForNodeHead = async () => {
    const block = await chain.client.getBlock()
    await waitForIndexedBlock(database.db, chain.chainId, Number(block.number), block.hash!)
  }
  try {
    await waitForIndexedBlock(database.db, chain.chainId, Number(head.number), head.hash!)
    const final = (await finalThroughOf(database.db, chain.chainId))!
    expect(final).toBeGreaterThan(Number(head.number) - 64 - 5)
    await expectIndexExact(database.db, chain, canonical)

    // [orphaned blocks, new-branch blocks], each branch forking at the node's head of the moment, far above the final blocks
    for (const [orphaned, replacement] of [[3, 5], [12, 8]] as const) {
      const snapshot = await chain.snapshot()
      await sendMixedTraffic(chain, { transactions: orphaned * 4, blocks: orphaned })
      await waitForNodeHead()
      await chain.revert(snapshot)
      appendTruth(canonical, await sendMixedTraffic(chain, { transactions: replacement * 4, blocks: replacement }))
      await waitForNodeHead()
      expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(totalsByCode(canonical))
    }
    const [state] = await database.db.$client`select refused_rollback_to from chain_state where chain_id = ${chain.chainId}`
    expect(state).toEqual({ refused_rollback_to: null })
    // live ranges at the head take the tip path: the final boundary stayed where the backfill left it
    expect(await finalThroughOf(database.db, chain.chainId)).toBe(final)
    await expectNothingHalfCommitted(database.db, chain.chainId)
    await expectIndexExact(database.db, chain, canonical)
  } finally {
    await indexer.stop()
  }
  // time passing: the windows move out of the final rows' presence and the tip rows' counts alike (forward only)
  for (const ahead of [HOUR_MS, 2 * DAY_MS, 8 * DAY_MS, 31 * DAY_MS]) await expectAggregatesMatchRows(database.db, [chain.chainId], new Date(Date.now() + ahead))
}, 240_000)
