import { expect, it } from 'vitest'
import { appendTruth, emptyTruth } from '../../devnet/ledger.js'
import type { ChainConfig } from '../../src/config/chains.js'
import { FINAL_REFS } from '../../src/store/final-refs.js'
import { sendMixedTraffic } from '../support/chain.js'
import { useChainServices } from '../support/fixtures.js'
import { expectIndexExact, expectNothingHalfCommitted, finalThroughOf, readyRollingWindows } from '../support/final-exact.js'
import { indexThrough } from '../support/indexer.js'
import { startForwarder } from '../support/json-rpc-forwarder.js'
import { createTestDatabase, createTestRedis } from '../support/services.js'

/**
 * The finality boundary (pipeline/finality.ts) moves while the indexer is
 * stopped, and the next run commits on both sides of where it was:
 * 1. a backfill across anvil's `finalized` block (64 behind its head):
 *    bulk below, tip above;
 * 2. more traffic while stopped: the node's finalized block is now past
 *    every range the first run committed by the tip path; the new ranges
 *    below it go bulk, their members (the same codes and senders, the same
 *    day) meeting the tip rows' counted ones in the sender tables;
 * 3. more traffic while stopped, and the node swapped for one without a
 *    `finalized` tag with FINALITY_DEPTH 8: the boundary is head − 8, past
 *    the second run's tip ranges.
 * After each run the index is exact (rows, totals, senders against the
 * chain, every distinct-sender count and window), nothing half-applied.
 *
 * Then a node without the `finalized` tag from the start: a fresh index
 * backfills through it with FINALITY_DEPTH 20, the boundary is head − 20
 * (never above), and the index is exact.
 */
const services = useChainServices('final_moves')
/** Every transaction sent to the chain: the first test sends it, the second indexes it again from scratch. */
const allTraffic = emptyTruth()

/** A node that answers an error for the `finalized` and `safe` tags, as one without them does; counts those calls. */
async function nodeWithoutFinalizedTag(target: string) {
  const refused = { finalized: 0, safe: 0 }
  const forwarder = await startForwarder({
    target,
    answer: (call) => {
      const tag = call.method === 'eth_getBlockByNumber' ? call.params?.[0] : undefined
      if (tag !== 'finalized' && tag !== 'safe') return undefined
      refused[tag]++
      return { error: { code: -32602, message: `invalid block tag ${tag}` } }
    },
  })
  return { forwarder, refused }
}

it('a restart with the boundary moved: ranges once tip-committed are below it, new ones bulk; exact after every run', async () => {
  const { chain, database, redis } = services
  await readyRollingWindows(database.db)
  const truth = allTraffic
  /** Blocks (after, through] each run left to the tip path: above its final boundary. */
  const tipCommitted: Array<[after: number, through: number]> = []
  const run = async (chains: ChainConfig[], head: number) => {
    await indexThrough({ database, redis, chains, chainId: chain.chainId, head, extra: { RANGE_SIZE: '4' } })
    await expectNothingHalfCommitted(database.db, chain.chainId)
    await expectIndexExact(database.db, chain, truth)
    const final = (await finalThroughOf(database.db, chain.chainId))!
    tipCommitted.push([final, head])
    // which path committed each row: exactly the rows above each run's boundary went the tip way, every other in bulk
    expect(await rowsCommittedByTip(), 'rows committed by the tip path').toBe(
      truth.attributions.filter((row) => tipCommitted.some(([after, through]) => row.blockNumber > after && row.blockNumber <= through)).length,
    )
    return final
  }
  /**
   * Rows the tip path committed, read from the chain's senders per day: a tip row counts 1 there, final rows
   * hold their sender once by FINAL_REFS (store/final-refs.ts), whatever their number.
   */
  const rowsCommittedByTip = async () => {
    const [row] = await database.db.$client<{ rows: number }[]>`
      select coalesce(sum(attributions % ${database.db.$client.unsafe(`${FINAL_REFS}::bigint`)}), 0)::float8 as rows
      from chain_daily_senders where chain_id = ${chain.chainId}`
    return row!.rows
  }

  // 1. across anvil's finalized block
  appendTruth(truth, await sendMixedTraffic(chain, { transactions: 160, blocks: 90 }))
  const head1 = Number(await chain.client.getBlockNumber())
  const final1 = await run([chain.config], head1)
  expect(final1).toBeGreaterThan(head1 - 64 - 4)
  expect(final1).toBeLessThanOrEqual(head1 - 64)

  // 2. the node's finalized block moved past every tip range of run 1 while stopped
  appendTruth(truth, await sendMixedTraffic(chain, { transactions: 160, blocks: 90 }))
  const head2 = Number(await chain.client.getBlockNumber())
  expect(head2 - 64).toBeGreaterThan(head1)
  const final2 = await run([chain.config], head2)
  expect(final2).toBeGreaterThan(head2 - 64 - 4)
  expect(final2).toBeLessThanOrEqual(head2 - 64)
  // run 1's tip rows and run 2's bulk rows share members (code, day, sender): each counted once (checked above),
  // held by both the tip's count and the final presence
  const [shared] = await database.db.$client<{ members: number; both: number }[]>`
    with tip as (
      select distinct code, (block_timestamp at time zone 'UTC')::date as day, sender from attributions
      where chain_id = ${chain.chainId} and block_number > ${final1} and block_number <= ${head1}
    ), bulk as (
      select distinct code, (block_timestamp at time zone 'UTC')::date as day, sender from attributions
      where chain_id = ${chain.chainId} and block_number > ${head1} and block_number <= ${final2}
    )
    select count(*)::int as members,
      count(*) filter (where exists (select 1 from jsonb_each_text(r.refs) s where s.value::bigint > ${FINAL_REFS}))::int as both
    from tip join bulk using (code, day, sender) join code_day_sender_refs r using (code, day, sender)`
  expect(shared!.members).toBeGreaterThan(0)
  expect(shared!.both).toBe(shared!.members)

  // 3. a node without the finalized tag, FINALITY_DEPTH 8: the boundary is the head less 8
  appendTruth(truth, await sendMixedTraffic(chain, { transactions: 60, blocks: 30 }))
  const head3 = Number(await chain.client.getBlockNumber())
  const { forwarder, refused } = await nodeWithoutFinalizedTag(chain.rpcUrl)
  try {
    const final3 = await run([{ ...chain.config, rpcUrl: forwarder.url, finalityDepth: 8 }], head3)
    expect(refused.finalized).toBeGreaterThan(0)
    expect(final3).toBeGreaterThan(head3 - 8 - 4)
    expect(final3).toBeLessThanOrEqual(head3 - 8)
    expect(final3).toBeGreaterThan(head2)
  } finally {
    await forwarder.close()
  }
}, 300_000)

it('a node without the finalized tag: the boundary is head − FINALITY_DEPTH, the backfill exact', async () => {
  const { chain } = services
  // the chain as the first test left it: its traffic is the ground truth again, on a fresh index
  const [database, redis] = await Promise.all([createTestDatabase('final_no_tag'), createTestRedis()])
  const { forwarder, refused } = await nodeWithoutFinalizedTag(chain.rpcUrl)
  try {
    await readyRollingWindows(database.db)
    const head = Number(await chain.client.getBlockNumber())
    await indexThrough({ database, redis, chains: [{ ...chain.config, rpcUrl: forwarder.url, finalityDepth: 20 }], chainId: chain.chainId, head, extra: { RANGE_SIZE: '4' } })
    expect(refused.finalized).toBeGreaterThan(0)
    const final = await finalThroughOf(database.db, chain.chainId)
    expect(final).toBeGreaterThan(head - 20 - 4)
    expect(final).toBeLessThanOrEqual(head - 20)
    await expectNothingHalfCommitted(database.db, chain.chainId)
    await expectIndexExact(database.db, chain, allTraffic)
  } finally {
    await forwarder.close()
    await database.drop()
    await redis.cleanup()
  }
}, 240_000)
