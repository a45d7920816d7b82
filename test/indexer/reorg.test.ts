import { expect, it } from 'vitest'
import { appendTruth, emptyTruth, totalsByCode } from '../../devnet/ledger.js'
import { sendMixedTraffic } from '../support/chain.js'
import { expectIndexMatchesTruth, useChainServices } from '../support/fixtures.js'
import { indexerEnv, startTestIndexer, totalsFromIndex, waitForIndexedBlock } from '../support/indexer.js'

const services = useChainServices('reorg')

async function waitForNodeHead() {
  const { chain, database } = services
  const block = await chain.client.getBlock()
  await waitForIndexedBlock(database.db, chain.chainId, Number(block.number), block.hash!)
}

it('rolls back orphaned blocks and counts the new branch, reorg after reorg', async () => {
  const { chain, database, redis } = services
  const indexer = await startTestIndexer({
    db: database.db,
    env: indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix, extra: { RANGE_SIZE: '3' } }),
    chains: [chain.config],
  })
  try {
    const canonical = emptyTruth()
    appendTruth(canonical, await sendMixedTraffic(chain, { transactions: 60, blocks: 15 }))
    await waitForNodeHead()

    // [orphaned blocks, new-branch blocks]: a longer branch, a same-length branch, a shorter branch, a deep one
    const shapes: Array<[number, number]> = [
      [3, 4],
      [5, 5],
      [6, 2],
      [10, 11],
    ]
    for (const [orphaned, replacement] of shapes) {
      const snapshot = await chain.snapshot()
      // attributed traffic on the branch that will be orphaned, indexed before the reorg
      await sendMixedTraffic(chain, { transactions: orphaned * 4, blocks: orphaned })
      await waitForNodeHead()
      await chain.revert(snapshot)
      appendTruth(canonical, await sendMixedTraffic(chain, { transactions: replacement * 4, blocks: replacement }))
      await waitForNodeHead()
      expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(totalsByCode(canonical))
    }
    await expectIndexMatchesTruth(database.db, chain.chainId, canonical)
  } finally {
    await indexer.stop()
  }
})
