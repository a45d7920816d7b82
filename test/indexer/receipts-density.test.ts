import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest'
import { openChain, type Chain } from '../../bench/chain/files.js'
import { denseChainParams, generateChain } from '../../bench/chain/generate.js'
import { createReplayServer, type ReplayServer } from '../../bench/chain/replay-server.js'
import { defaultEntryPoints } from '../../src/config/chains.js'
import { totalsByCode, type ExpectedIndex } from '../../devnet/ledger.js'
import { indexerEnv, rowsFromIndex, rowsFromTruth, startTestIndexer, totalsFromIndex, waitForIndexed } from '../support/indexer.js'
import { startForwarder, type Forwarder } from '../support/json-rpc-forwarder.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

/**
 * Receipts by density (issue 23.1), on a dense generated chain (half the
 * transactions attributed, EntryPoint bundles, reverts) served by the replay
 * node behind a front that counts calls and misbehaves on demand.
 */

const params = { ...denseChainParams, blocks: 8, txPerBlock: 60 }
let dir: string
let chain: Chain
let expected: ExpectedIndex
let node: ReplayServer
let front: Forwarder
let redis: TestRedis
const databases: TestDatabase[] = []

beforeAll(async () => {
  dir = mkdtempSync(`${tmpdir()}/chain-receipts-`)
  generateChain(params, dir)
  chain = openChain(dir)
  expected = chain.expectedIndex()
  node = await createReplayServer(chain).listen()
  redis = await createTestRedis()
}, 120_000)

afterAll(async () => {
  await front?.close()
  await node?.close()
  chain?.close()
  rmSync(dir, { recursive: true, force: true })
  for (const database of databases) await database.drop()
  await redis?.cleanup()
})

beforeEach(async () => {
  await front?.close()
  front = await startForwarder({ target: node.url })
})

async function indexWholeChain(name: string) {
  const database = await createTestDatabase(name)
  databases.push(database)
  const indexer = await startTestIndexer({
    db: database.db,
    env: indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: `${redis.prefix}${name}:`, extra: { RANGE_SIZE: '4' } }),
    chains: [{ chainId: params.chainId, rpcUrl: front.url, wsUrl: undefined, startBlock: 0, confirmations: 0, finalityDepth: 64, pollIntervalMs: 100, entryPoints: [...defaultEntryPoints] }],
  })
  try {
    await waitForIndexed(database.db, params.chainId, chain.lastBlock, 90_000)
  } finally {
    await indexer.stop()
  }
  expect(await rowsFromIndex(database.db, params.chainId)).toEqual(rowsFromTruth(expected))
  expect(await totalsFromIndex(database.db, params.chainId)).toEqual(totalsByCode(expected))
}

it('indexes a dense chain exactly (reverts and UserOperations included) with one eth_getBlockReceipts per block, not one call per candidate', async () => {
  expect(expected.attributions.some((row) => row.kind === 'userOperation')).toBe(true)
  expect(expected.attributions.some((row) => row.status === 'reverted')).toBe(true)
  await indexWholeChain('dense')
  const blockReceipts = front.methodCalls.eth_getBlockReceipts ?? 0
  expect(blockReceipts).toBeGreaterThan(0)
  // at most one block receipts call per block (and the probe); single receipts far fewer than the candidates
  expect(blockReceipts).toBeLessThanOrEqual(chain.lastBlock + 2)
  expect(front.methodCalls.eth_getTransactionReceipt ?? 0).toBeLessThan(new Set(expected.attributions.map((row) => row.txHash)).size / 4)
})

it('gives a node without eth_getBlockReceipts single receipts, quietly and exactly', async () => {
  front.setAnswer((call) =>
    call.method === 'eth_getBlockReceipts' ? { error: { code: -32601, message: 'the method eth_getBlockReceipts does not exist/is not available' } } : undefined,
  )
  await indexWholeChain('noblockreceipts')
  // asked once (the probe), remembered: never again
  expect(front.methodCalls.eth_getBlockReceipts).toBe(1)
  expect(front.methodCalls.eth_getTransactionReceipt ?? 0).toBeGreaterThan(0)
})

it('turns to single receipts when a node stops serving eth_getBlockReceipts after saying it did (a pool of mixed nodes behind one URL)', async () => {
  let served = 0
  front.setAnswer((call) => {
    if (call.method !== 'eth_getBlockReceipts') return undefined
    // the capability probe is answered; every later call is refused
    if (served++ === 0) return undefined
    return { error: { code: -32601, message: 'the method eth_getBlockReceipts does not exist/is not available' } }
  })
  await indexWholeChain('stopsblockreceipts')
  expect(front.methodCalls.eth_getTransactionReceipt ?? 0).toBeGreaterThan(0)
})

it('never mixes receipts of another block hash into a range: a reorg between block and receipts is a retry', async () => {
  let forged = 0
  front.setRewrite((call, result) => {
    // the first answers come from "another branch": same height, another block hash
    if (call.method !== 'eth_getBlockReceipts' || !Array.isArray(result) || forged >= 6) return result
    forged++
    return result.map((receipt: Record<string, unknown>) => ({ ...receipt, blockHash: `0x${'e'.repeat(64)}` }))
  })
  await indexWholeChain('receiptsreorg')
  expect(forged).toBe(6)
  // each forged answer was refused and asked again: more block receipts than blocks
  expect(front.methodCalls.eth_getBlockReceipts).toBeGreaterThanOrEqual(chain.lastBlock + 6)
})
