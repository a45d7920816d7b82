import { decodeFunctionData, type Hex, type TransactionReceipt } from 'viem'
import { entryPoint06Abi, entryPoint07Abi } from 'viem/account-abstraction'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodeAttribution } from '../../src/attribution/decode.js'
import { entryPointVersions } from '../../devnet/entry-points.js'
import { totalsByCode, type ExpectedAttribution, type GroundTruth } from '../../devnet/traffic.js'
import { userOperationOutcomes } from '../../devnet/userops.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'

/**
 * Rebuilds the ground truth from the chain alone, the way an indexer would:
 * every transaction of every block, decoded with our codec, bundles opened
 * and joined to their UserOperationEvents. The generator's ledger must match.
 */
async function truthFromChain(chain: TestChain, fromBlock: number, toBlock: number): Promise<{ truth: GroundTruth; transactions: number; blocks: Set<number> }> {
  const truth: GroundTruth = { attributions: [], malformed: [], unattributedTxHashes: [] }
  const entryPoints = new Map(entryPointVersions.map((version) => [chain.contracts.entryPoints[version].address.toLowerCase(), version]))
  let transactions = 0
  const blocks = new Set<number>()
  for (let number = fromBlock; number <= toBlock; number++) {
    const block = await chain.client.getBlock({ blockNumber: BigInt(number), includeTransactions: true })
    const receipts = await Promise.all(block.transactions.map((tx) => chain.client.getTransactionReceipt({ hash: tx.hash })))
    for (const [index, tx] of block.transactions.entries()) {
      transactions++
      blocks.add(number)
      const receipt = receipts[index] as TransactionReceipt
      let attributes = false
      const add = (input: Hex, row: Omit<ExpectedAttribution, 'code' | 'schemaId' | 'suffixGas'>) => {
        const decoded = decodeAttribution(input)
        if (decoded.kind === 'malformed') truth.malformed.push({ txHash: row.txHash, userOpIndex: row.userOpIndex })
        if (decoded.kind !== 'attributed') return
        attributes = true
        for (const code of decoded.codes) truth.attributions.push({ ...row, code, schemaId: decoded.schemaId, suffixGas: decoded.suffixGas })
      }
      const base = { chainId: chain.chainId, blockNumber: number, txHash: tx.hash }
      const version = tx.to ? entryPoints.get(tx.to.toLowerCase()) : undefined
      if (version) {
        const { args } = decodeFunctionData({ abi: version === '0.6' ? entryPoint06Abi : entryPoint07Abi, data: tx.input })
        const ops = args[0] as ReadonlyArray<{ sender: string; nonce: bigint; callData: Hex }>
        const outcomes = userOperationOutcomes(receipt.logs, tx.to!)
        for (const [userOpIndex, op] of ops.entries()) {
          const outcome = outcomes.find((event) => event.sender.toLowerCase() === op.sender.toLowerCase() && event.nonce === op.nonce)
          expect(outcome, `UserOperationEvent of op ${userOpIndex} in ${tx.hash}`).toBeDefined()
          const before = truth.malformed.length
          add(op.callData, { ...base, kind: 'userOperation', userOpIndex, userOpHash: outcome!.userOpHash, status: outcome!.success ? 'success' : 'reverted' })
          if (truth.malformed.length > before) attributes = true
        }
      } else {
        const before = truth.malformed.length
        add(tx.input, { ...base, kind: 'transaction', userOpIndex: -1, status: receipt.status === 'success' ? 'success' : 'reverted' })
        if (truth.malformed.length > before) attributes = true
      }
      if (!attributes) truth.unattributedTxHashes.push(tx.hash)
    }
  }
  return { truth, transactions, blocks }
}

const rowKey = (row: ExpectedAttribution) =>
  [row.txHash, row.userOpIndex, row.code, row.kind, row.status, row.schemaId, row.suffixGas, row.blockNumber, row.userOpHash ?? '-', row.chainId].join('|')

describe('traffic generator ground truth', () => {
  let chain: TestChain
  let truth: GroundTruth
  let firstBlock: number
  let lastBlock: number

  beforeAll(async () => {
    chain = await startTestChain()
    firstBlock = Number(await chain.client.getBlockNumber()) + 1
    truth = await sendMixedTraffic(chain, { transactions: 200, blocks: 50 })
    lastBlock = Number(await chain.client.getBlockNumber())
  })
  afterAll(async () => {
    await chain?.stop()
  })

  it('mines 200 transactions over at least 50 blocks', async () => {
    const onChain = await truthFromChain(chain, firstBlock, lastBlock)
    expect(onChain.transactions).toBe(200)
    expect(onChain.blocks.size).toBeGreaterThanOrEqual(50)
  })

  it('matches what our decoder reads back from every mined transaction and operation', async () => {
    const onChain = (await truthFromChain(chain, firstBlock, lastBlock)).truth
    expect(truth.attributions.map(rowKey).sort()).toEqual(onChain.attributions.map(rowKey).sort())
    const malformedKey = (row: { txHash: Hex; userOpIndex: number }) => `${row.txHash}:${row.userOpIndex}`
    expect(truth.malformed.map(malformedKey).sort()).toEqual(onChain.malformed.map(malformedKey).sort())
    expect([...truth.unattributedTxHashes].sort()).toEqual([...onChain.unattributedTxHashes].sort())
  })

  it('covers every kind of traffic', () => {
    const rows = truth.attributions
    for (const schemaId of [0, 1, 2] as const) expect(rows.some((row) => row.schemaId === schemaId)).toBe(true)
    expect(rows.some((row) => row.code === 'Bad-Code')).toBe(true)
    expect(rows.some((row) => /^bc_[0-9a-z]{8}$/.test(row.code))).toBe(true)
    expect(rows.some((row) => row.kind === 'transaction' && row.status === 'reverted')).toBe(true)
    expect(rows.some((row) => row.kind === 'userOperation' && row.status === 'reverted')).toBe(true)
    expect(rows.some((row) => row.kind === 'userOperation' && row.status === 'success')).toBe(true)
    expect(truth.malformed.some((row) => row.userOpIndex === -1)).toBe(true)
    expect(truth.malformed.some((row) => row.userOpIndex >= 0)).toBe(true)
    expect(truth.unattributedTxHashes.length).toBeGreaterThan(0)
    // a transaction attributing several codes, and one of them repeated in its suffix, appears once per code
    const perTx = new Map<string, string[]>()
    for (const row of rows) perTx.set(`${row.txHash}:${row.userOpIndex}`, [...(perTx.get(`${row.txHash}:${row.userOpIndex}`) ?? []), row.code])
    expect([...perTx.values()].some((codes) => codes.length >= 2)).toBe(true)
    for (const codes of perTx.values()) expect(new Set(codes).size).toBe(codes.length)
  })

  it('has operations on every EntryPoint version', async () => {
    const bundleTargets = new Set<string>()
    const hashes = new Set(truth.attributions.filter((row) => row.kind === 'userOperation').map((row) => row.txHash))
    for (const hash of hashes) bundleTargets.add((await chain.client.getTransaction({ hash })).to!.toLowerCase())
    for (const version of entryPointVersions) expect(bundleTargets).toContain(chain.contracts.entryPoints[version].address.toLowerCase())
  })

  it('sums totals per code the way the analytics API counts them', () => {
    const totals = totalsByCode(truth)
    for (const [code, total] of Object.entries(totals)) {
      const rows = truth.attributions.filter((row) => row.code === code)
      expect(total.transactions).toBe(rows.filter((row) => row.kind === 'transaction' && row.status === 'success').length)
      expect(total.userOperations).toBe(rows.filter((row) => row.kind === 'userOperation' && row.status === 'success').length)
      expect(total.reverted).toBe(rows.filter((row) => row.status === 'reverted').length)
      expect(total.suffixGas).toBe(rows.reduce((sum, row) => sum + row.suffixGas, 0))
    }
    expect(Object.values(totals).reduce((sum, total) => sum + total.transactions + total.userOperations + total.reverted, 0)).toBe(truth.attributions.length)
  })

  it('uses the registered builder codes it is given, and keeps a cumulative ledger', async () => {
    const before = chain.traffic.truth().attributions.length
    const registered = ['bc_aaaaaaaa', 'bc_bbbbbbbb']
    const more = await sendMixedTraffic(chain, { transactions: 36, blocks: 6, registeredCodes: registered })
    const bcCodes = new Set(more.attributions.map((row) => row.code).filter((code) => code.startsWith('bc_')))
    expect(bcCodes.size).toBeGreaterThan(0)
    for (const code of bcCodes) expect(registered).toContain(code)
    expect(chain.traffic.truth().attributions.length).toBe(before + more.attributions.length)
  })

  it('keeps working across a snapshot revert (a reorg)', async () => {
    const id = await chain.snapshot()
    const height = await chain.client.getBlockNumber()
    await sendMixedTraffic(chain, { transactions: 18, blocks: 3 })
    const orphaned = await chain.client.getBlock({ blockNumber: height + 1n })
    await chain.revert(id)
    expect(await chain.client.getBlockNumber()).toBe(height)
    const replacement = await sendMixedTraffic(chain, { transactions: 18, blocks: 3 })
    const reorged = await chain.client.getBlock({ blockNumber: height + 1n })
    expect(reorged.hash).not.toBe(orphaned.hash)
    expect(replacement.attributions.length).toBeGreaterThan(0)
    await chain.mine(2)
    expect(await chain.client.getBlockNumber()).toBe(height + 5n)
  })
})
