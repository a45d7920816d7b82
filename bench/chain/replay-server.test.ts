import { createPublicClient, http, parseAbiItem, type Hash } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ExpectedIndex } from '../../devnet/ledger.js'
import { openChain, type Chain } from './files.js'
import { measureFloor, middleOf, sweepFloor } from './floor.js'
import { ensureChain } from './generate.js'
import { createReplayServer, type ReplayServer } from './replay-server.js'
import { testChainParams } from './test-chain.js'
import type { ChainTruth } from './truth.js'

let chain: Chain
let server: ReplayServer
let truth: ChainTruth
let expected: ExpectedIndex

async function rpc(body: unknown): Promise<any> {
  const response = await fetch(server.url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
  expect(response.headers.get('content-type')).toBe('application/json')
  return response.json()
}

const call = (method: string, params: unknown[] = [], id: unknown = 1) => ({ jsonrpc: '2.0', id, method, params })

beforeAll(async () => {
  chain = openChain(ensureChain(testChainParams))
  truth = chain.truth()
  expected = chain.expectedIndex()
  server = await createReplayServer(chain).listen()
})

afterAll(async () => {
  await server?.close()
  chain?.close()
})

describe('JSON-RPC', () => {
  it('answers single calls and batches in request order with the caller ids', async () => {
    expect(await rpc(call('eth_chainId', [], 'a'))).toEqual({ jsonrpc: '2.0', id: 'a', result: `0x${testChainParams.chainId.toString(16)}` })
    const batch = await rpc([call('eth_blockNumber', [], 7), call('eth_getBlockByNumber', ['0x2', true], 8), call('eth_getBlockByNumber', ['0x2', false], 9)])
    expect(batch.map((item: { id: number }) => item.id)).toEqual([7, 8, 9])
    expect(batch[0].result).toBe(`0x${chain.lastBlock.toString(16)}`)
    expect(batch[1].result).toEqual(JSON.parse(chain.fullBlock(2).toString()))
    expect(batch[2].result.transactions).toEqual(batch[1].result.transactions.map((tx: { hash: string }) => tx.hash))
  })

  it('resolves block tags and hashes, and answers null beyond the chain', async () => {
    const [latest, earliest, byHash, missing] = await rpc([
      call('eth_getBlockByNumber', ['latest', false], 1),
      call('eth_getBlockByNumber', ['earliest', false], 2),
      call('eth_getBlockByHash', [chain.hashes[3], false], 3),
      call('eth_getBlockByNumber', [`0x${(chain.lastBlock + 1).toString(16)}`, true], 4),
    ])
    expect(latest.result.number).toBe(`0x${chain.lastBlock.toString(16)}`)
    expect(earliest.result.number).toBe('0x0')
    expect(byHash.result.hash).toBe(chain.hashes[3])
    expect(missing.result).toBeNull()
  })

  it('reports an unknown method as -32601 and counts it', async () => {
    const response = await rpc(call('debug_traceBlockByNumber', ['0x1']))
    expect(response.error.code).toBe(-32601)
    expect(server.stats().unsupported).toMatchObject({ debug_traceBlockByNumber: 1 })
  })

  it('answers malformed JSON with a parse error', async () => {
    const response = await fetch(server.url, { method: 'POST', body: '{nope' })
    expect(((await response.json()) as { error: { code: number } }).error.code).toBe(-32700)
  })
})

describe('through viem, as the indexer reads it', () => {
  const client = () => createPublicClient({ transport: http(server.url, { batch: true }) })

  it('formats full blocks and stored receipts', async () => {
    const unit = expected.attributions.find((row) => row.kind === 'transaction')!
    const block = await client().getBlock({ blockNumber: BigInt(unit.blockNumber), includeTransactions: true })
    const tx = block.transactions.find((candidate) => candidate.hash === unit.txHash)!
    expect(tx.input.endsWith('80218021802180218021802180218021')).toBe(true)
    const receipt = await client().getTransactionReceipt({ hash: unit.txHash as Hash })
    expect(receipt.status).toBe(unit.status)
    expect(receipt.blockHash).toBe(block.hash)
  })

  it('rebuilds receipts of ordinary transactions, consistent with the block', async () => {
    const block = await client().getBlock({ blockNumber: 5n, includeTransactions: false })
    const receipts = await client().request({ method: 'eth_getBlockReceipts', params: ['0x5'] })
    expect(receipts).toHaveLength(block.transactions.length)
    expect(receipts!.map((r) => r.transactionHash)).toEqual(block.transactions)
    expect(BigInt(receipts!.at(-1)!.cumulativeGasUsed)).toBe(block.gasUsed)
    const plain = await client().getTransactionReceipt({ hash: block.transactions[0]! })
    expect(plain.transactionIndex).toBe(0)
    const tx = await client().getTransaction({ hash: block.transactions[1]! })
    expect(tx.blockNumber).toBe(5n)
  })

  it('finds a UserOperation by its hash through eth_getLogs', async () => {
    const unit = expected.attributions.find((row) => row.kind === 'userOperation')!
    const logs = await client().getLogs({
      event: parseAbiItem(
        'event UserOperationEvent(bytes32 indexed userOpHash, address indexed sender, address indexed paymaster, uint256 nonce, bool success, uint256 actualGasCost, uint256 actualGasUsed)',
      ),
      args: { userOpHash: unit.userOpHash as Hash },
      fromBlock: 0n,
      toBlock: 'latest',
    })
    expect(logs).toHaveLength(1)
    expect(logs[0]!.transactionHash).toBe(unit.txHash)
    expect(logs[0]!.args.success).toBe(unit.status === 'success')
  })
})

describe('release schedule', () => {
  afterAll(() => server.release({ head: chain.lastBlock }))

  it('hides blocks above a fixed head', async () => {
    server.release({ head: 4 })
    const [head, released, hidden] = await rpc([
      call('eth_blockNumber', [], 1),
      call('eth_getBlockByNumber', ['0x4', false], 2),
      call('eth_getBlockByNumber', ['0x5', false], 3),
    ])
    expect(head.result).toBe('0x4')
    expect(released.result.number).toBe('0x4')
    expect(hidden.result).toBeNull()
    const hiddenReceipt = await rpc(call('eth_getTransactionReceipt', [expected.attributions.find((row) => row.blockNumber > 4)!.txHash]))
    expect(hiddenReceipt.result).toBeNull()
  })

  it('grows the head at the configured rate until the end of the chain', async () => {
    const rate = 200
    const release = server.release({ head: 1, rate })
    // what the head must be at a moment, by the schedule: each answer lies between its request's and its answer's
    const scheduled = (at: number) => Math.min(chain.lastBlock, 1 + Math.floor(((at - release.baseAt) * rate) / 1000))
    const seen: number[] = []
    while (seen.at(-1) !== chain.lastBlock) {
      const before = Date.now()
      const head = Number.parseInt((await rpc(call('eth_blockNumber'))).result, 16)
      expect(head).toBeGreaterThanOrEqual(scheduled(before))
      expect(head).toBeLessThanOrEqual(scheduled(Date.now()))
      seen.push(head)
    }
    expect([...seen].sort((a, b) => a - b)).toEqual(seen)
  })
})

describe('floor', () => {
  it('downloads and parses every block of the range once', async () => {
    server.release({ head: chain.lastBlock })
    const result = await measureFloor({ url: server.url, from: 1, to: chain.lastBlock, batchSize: 5, concurrency: 3 })
    expect(result.blocks).toBe(chain.lastBlock)
    expect(result.transactions).toBe(truth.transactions)
    // 12 blocks in batches of at most 5
    expect(result.requests).toBe(3)
  })

  it('asks the candidates\' receipts in batches of their own length, gathered across block batches', async () => {
    server.release({ head: chain.lastBlock })
    const asked = () => server.stats().calls.eth_getTransactionReceipt ?? 0
    const run = async (receiptBatchSize: number) => {
      const before = asked()
      const result = await measureFloor({ url: server.url, from: 1, to: chain.lastBlock, batchSize: 2, concurrency: 3, candidates: true, receiptBatchSize })
      return { result, asked: asked() - before }
    }
    const short = await run(7)
    expect(short.result.receipts).toBeGreaterThan(7)
    expect(short.asked).toBe(short.result.receipts)
    expect(short.result.receiptBatchSize).toBe(7)
    // 6 block batches; receipts 7 a request, but for the tail's shares (at most one per request in flight)
    expect(short.result.requests - 6).toBeLessThanOrEqual(Math.ceil(short.result.receipts / 7) + 3)
    // longer than every candidate of the chain: all of them wait for the last blocks, then go split among the requests in flight
    const long = await run(1_000)
    expect(long.result.receipts).toBe(short.result.receipts)
    expect(long.result.transactions).toBe(truth.transactions)
    expect(long.result.requests - 6).toBeGreaterThanOrEqual(1)
    expect(long.result.requests - 6).toBeLessThanOrEqual(3)
  })

  it('sweeps the receipts\' length at the best block points, and names it with the winner', async () => {
    const grid = { url: server.url, from: 1, to: chain.lastBlock, sampleBlocks: 6, batchSizes: [3, 6], concurrencies: [1, 2], finalists: 2 }
    const sweep = await sweepFloor({ ...grid, candidates: true, receiptBatchSizes: [5, 50, 1_000], receiptBlockPoints: 1 })
    expect(middleOf([5, 50, 1_000])).toBe(50)
    expect(sweep.sampleReceiptBatchSize).toBe(50)
    // 2 × 2 block points at 50 receipts a request, then the best of them at 5 and 1,000
    expect(sweep.ranked).toHaveLength(6)
    const best = sweep.ranked.filter((p) => p.receiptBatchSize !== 50)
    expect(new Set(best.map((p) => `${p.batchSize}×${p.concurrency}`)).size).toBe(1)
    expect([5, 50, 1_000]).toContain(sweep.receiptBatchSize)
    expect(sweep.finalists).toHaveLength(2)
    expect(sweep.finalists[0]).toMatchObject({ batchSize: sweep.batchSize, concurrency: sweep.concurrency, receiptBatchSize: sweep.receiptBatchSize })
    // blocks only: no receipts stage, and the length is the blocks' (it asks none)
    const blocksOnly = await sweepFloor(grid)
    expect(blocksOnly.ranked).toHaveLength(4)
    expect(blocksOnly.sampleReceiptBatchSize).toBeUndefined()
    expect(blocksOnly.receiptBatchSize).toBe(blocksOnly.batchSize)
  })

  it('downloads the same blocks through the indexer\'s RPC client', async () => {
    const result = await measureFloor({ url: server.url, from: 1, to: chain.lastBlock, batchSize: 2, concurrency: 3, client: 'indexer-rpc' })
    expect(result.blocks).toBe(chain.lastBlock)
    expect(result.transactions).toBe(truth.transactions)
  })
})

describe('node profiles', () => {
  afterAll(() => server.setProfile({ name: 'fast' }))

  it('answers the same bytes on the serial profile, later', async () => {
    const body = [call('eth_getBlockByNumber', ['0x3', true], 1), call('eth_getBlockByNumber', ['0x4', true], 2)]
    const fast = await rpc(body)
    server.setProfile({ name: 'serial', options: { requestMs: 5, callMs: 1, msPerMiB: 10, quadraticMsPerMiB2: 1, contention: 0.1 } })
    const busyBefore = server.stats().modelledBusyMs
    expect(await rpc(body)).toEqual(fast)
    // the node's thread was busy for at least the request and its two calls
    expect(server.stats().modelledBusyMs - busyBefore).toBeGreaterThanOrEqual(7)
  })

  it('refuses a request past the remote cap with 429 and Retry-After while one is held', async () => {
    // the first request is held for its latency (5 s): long enough for the second to arrive meanwhile
    server.setProfile({ name: 'remote', options: { latencyMs: 5_000, maxInFlight: 1, retryAfterSeconds: 2 } })
    const held = fetch(server.url, { method: 'POST', body: JSON.stringify(call('eth_chainId')) })
    // the positive signal that the first is held: the node counts it in flight
    await expect.poll(() => server.stats().maxInFlight).toBe(1)
    const response = await fetch(server.url, { method: 'POST', body: JSON.stringify(call('eth_chainId')) })
    expect(response.status).toBe(429)
    expect(response.headers.get('retry-after')).toBe('2')
    expect(server.stats().refused).toBe(1)
    expect((await held).status).toBe(200)
  })

  it('lets the floor fetch every block from a remote node that refuses, asking again after Retry-After', async () => {
    server.setProfile({ name: 'remote', options: { latencyMs: 200, maxInFlight: 1, retryAfterSeconds: 1 } })
    const result = await measureFloor({ url: server.url, from: 1, to: chain.lastBlock, batchSize: 4, concurrency: 3 })
    expect(result.transactions).toBe(truth.transactions)
    expect(result.requests).toBe(3)
    // three sent at once against a cap of one: the other two were refused at least once
    expect(result.refused).toBeGreaterThanOrEqual(2)
  })
})

describe('receipts', () => {
  it('answers eth_getBlockReceipts with the block\'s stored receipts, by number or by hash', async () => {
    const [byNumber, byHash] = await rpc([call('eth_getBlockReceipts', ['0x6'], 1), call('eth_getBlockReceipts', [chain.hashes[6]], 2)])
    expect(byNumber.result).toEqual(JSON.parse(chain.blockReceipts(6).toString()))
    expect(byHash.result).toEqual(byNumber.result)
  })

  it('lets the floor fetch every block with its receipts', async () => {
    server.release({ head: chain.lastBlock })
    const result = await measureFloor({ url: server.url, from: 1, to: chain.lastBlock, batchSize: 5, concurrency: 2, receipts: true })
    expect(result.transactions).toBe(truth.transactions)
    expect(server.stats().calls.eth_getBlockReceipts).toBeGreaterThanOrEqual(chain.lastBlock)
  })
})
