import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { totalsByCode, type GroundTruth } from '../../devnet/ledger.js'
import { createRegistry } from '../../src/registry/register.js'
import { startTestChain, sendMixedTraffic, type TestChain } from '../support/chain.js'
import { indexThrough, malformedFromIndex, malformedFromTruth, rowsFromIndex, rowsFromTruth, totalsFromIndex } from '../support/indexer.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

let chain: TestChain
let database: TestDatabase
let redis: TestRedis
let truth: GroundTruth
let head: number

beforeAll(async () => {
  ;[chain, database, redis] = await Promise.all([startTestChain(), createTestDatabase('mixed'), createTestRedis()])
  // register the wallets whose codes the traffic uses, so some codes resolve as registered
  const registry = createRegistry({ db: database.db })
  const registered = await Promise.all(chain.wallets.traffic.slice(0, 3).map((sender) => registry.register(sender.address)))
  truth = await sendMixedTraffic(chain, { transactions: 240, blocks: 60, registeredCodes: registered.map((r) => r.builderCode) })
  head = Number(await chain.client.getBlockNumber())
  await indexThrough({ database, redis, chains: [chain.config], chainId: chain.chainId, head })
}, 180_000)

afterAll(async () => {
  await chain?.stop()
  await database?.drop()
  await redis?.cleanup()
})

describe('mixed traffic on anvil', () => {
  it('was a real mix: schemas 0/1/2, UserOperations on every EntryPoint, reverted and malformed', () => {
    const schemas = new Set(truth.attributions.map((a) => a.schemaId))
    expect([...schemas].sort()).toEqual([0, 1, 2])
    expect(truth.attributions.filter((a) => a.kind === 'userOperation').length).toBeGreaterThan(5)
    expect(truth.attributions.some((a) => a.kind === 'userOperation' && a.status === 'reverted')).toBe(true)
    expect(truth.attributions.some((a) => a.kind === 'transaction' && a.status === 'reverted')).toBe(true)
    expect(truth.malformed.length).toBeGreaterThan(0)
    expect(truth.unattributedTxHashes.length).toBeGreaterThan(0)
    expect(new Set(truth.attributions.map((a) => a.blockNumber)).size).toBeGreaterThanOrEqual(50)
  })

  it('totals per code equal the ground truth exactly', async () => {
    expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(totalsByCode(truth))
  })

  it('attribution rows equal the ground truth exactly', async () => {
    expect(await rowsFromIndex(database.db, chain.chainId)).toEqual(rowsFromTruth(truth))
  })

  it('counts every malformed suffix, and only those', async () => {
    expect(await malformedFromIndex(database.db, chain.chainId)).toEqual(malformedFromTruth(truth))
  })

  it('joins each UserOperation to its event hash and resolves registered codes', async () => {
    const ops = await database.db.$client<{ tx_hash: string; user_op_index: number; user_op_hash: string | null }[]>`
      select distinct tx_hash, user_op_index, user_op_hash from attributions where kind = 'userOperation'`
    const expected = new Map(truth.attributions.filter((a) => a.kind === 'userOperation').map((a) => [`${a.txHash.toLowerCase()}:${a.userOpIndex}`, a.userOpHash]))
    for (const op of ops) expect(op.user_op_hash).toBe(expected.get(`${op.tx_hash}:${op.user_op_index}`))
    const statuses = await database.db.$client<{ code_status: string; n: number }[]>`
      select code_status, count(*)::int as n from attributions group by code_status`
    const byStatus = Object.fromEntries(statuses.map((s) => [s.code_status, s.n]))
    expect(byStatus.registered).toBeGreaterThan(0)
    expect(byStatus.invalid).toBeGreaterThan(0)
    expect(byStatus.custom).toBeGreaterThan(0)
    expect(byStatus.unregistered).toBeGreaterThan(0)
  })

  it('scanned every block exactly once', async () => {
    const [row] = await database.db.$client<{ blocks: number; min: string; max: string }[]>`
      select count(*)::int as blocks, min(number) as min, max(number) as max from blocks where chain_id = ${chain.chainId}`
    expect(row).toEqual({ blocks: head + 1, min: '0', max: String(head) })
  })
})
