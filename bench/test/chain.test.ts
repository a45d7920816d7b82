import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { decodeEventLog, decodeFunctionData, type Hex } from 'viem'
import { entryPoint06Abi, entryPoint07Abi, entryPoint08Abi } from 'viem/account-abstraction'
import { afterAll, describe, expect, it } from 'vitest'
import { decodeAttribution } from '../../src/attribution/decode.js'
import { openChain, type Chain } from '../chain/files.js'
import { denseChainParams, ensureChain, generateChain } from '../chain/generate.js'
import type { CodeTotals, GroundTruth } from '../chain/truth.js'
import { entryPointAddresses } from '../chain/user-operations.js'
import { testChainParams } from './fixtures.js'

type Tx = { hash: string; to: string | null; input: Hex; blockNumber: string; transactionIndex: string }
type Block = { number: string; hash: string; parentHash: string; transactions: Tx[]; gasUsed: string; logsBloom: string }
type Receipt = { status: string; logs: Array<{ address: string; topics: [Hex, ...Hex[]]; data: Hex }>; cumulativeGasUsed: string }

const entryPointAbis = { 0: entryPoint06Abi, 1: entryPoint07Abi, 2: entryPoint08Abi } as const

/**
 * Re-derives the totals from the chain's bytes alone, the way an indexer
 * would: the project's decoder on transaction inputs, viem's ABI decoding of
 * bundles and their UserOperationEvent logs for operations. If the ground
 * truth the generator wrote disagrees with this, the benches would verify
 * the indexer against a wrong answer.
 */
function recount(chain: Chain): { totals: Record<string, CodeTotals>; malformed: number; rows: number } {
  const totals: Record<string, CodeTotals> = {}
  let malformed = 0
  let rows = 0
  const add = (codes: string[], kind: 'transaction' | 'userOperation', success: boolean, gas: number) => {
    for (const code of codes) {
      totals[code] ??= {
        transaction: { success: 0, reverted: 0, suffixGas: 0, suffixGasSuccess: 0 },
        userOperation: { success: 0, reverted: 0, suffixGas: 0, suffixGasSuccess: 0 },
      }
      const counts = totals[code]![kind]
      if (success) {
        counts.success++
        counts.suffixGasSuccess += gas
      } else counts.reverted++
      counts.suffixGas += gas
      rows++
    }
  }
  for (let number = 0; number <= chain.lastBlock; number++) {
    const block = JSON.parse(chain.fullBlock(number).toString()) as Block
    for (const tx of block.transactions) {
      const version = entryPointAddresses.findIndex((address) => address.toLowerCase() === tx.to)
      if (version >= 0) {
        const abi = entryPointAbis[version as 0 | 1 | 2]
        const call = decodeFunctionData({ abi, data: tx.input })
        const ops: ReadonlyArray<{ callData: Hex }> =
          call.functionName === 'handleAggregatedOps'
            ? (call.args[0] as ReadonlyArray<{ userOps: ReadonlyArray<{ callData: Hex }> }>).flatMap((group) => group.userOps)
            : (call.args[0] as ReadonlyArray<{ callData: Hex }>)
        const receipt = JSON.parse(chain.storedReceipt(tx.hash)!.toString()) as Receipt
        const events = receipt.logs
          .filter((log) => log.address === tx.to)
          .map((log) => decodeEventLog({ abi, ...log }))
          .filter((event) => event.eventName === 'UserOperationEvent')
        expect(events).toHaveLength(ops.length)
        ops.forEach((op, i) => {
          const decoded = decodeAttribution(op.callData)
          if (decoded.kind === 'attributed') add(decoded.codes, 'userOperation', (events[i]!.args as { success: boolean }).success, decoded.suffixGas)
        })
        continue
      }
      const decoded = decodeAttribution(tx.input)
      if (decoded.kind === 'malformed') malformed++
      if (decoded.kind !== 'attributed') continue
      const receipt = JSON.parse(chain.storedReceipt(tx.hash)!.toString()) as Receipt
      add(decoded.codes, 'transaction', receipt.status === '0x1', decoded.suffixGas)
    }
  }
  return { totals, malformed, rows }
}

describe('generated chain', () => {
  const chain = openChain(ensureChain(testChainParams))
  const truth: GroundTruth = chain.truth()
  afterAll(() => chain.close())

  it('chains every block to its parent by hash, with the advertised transaction count', () => {
    let parent = `0x${'0'.repeat(64)}`
    for (let number = 0; number <= chain.lastBlock; number++) {
      const block = JSON.parse(chain.fullBlock(number).toString()) as Block
      expect(block.number).toBe(`0x${number.toString(16)}`)
      expect(block.parentHash).toBe(parent)
      expect(block.hash).toBe(chain.hashes[number])
      expect(block.transactions).toHaveLength(number === 0 ? 0 : testChainParams.txPerBlock)
      const header = JSON.parse(chain.headerBlock(number).toString()) as { transactions: string[] }
      expect(header.transactions).toEqual(block.transactions.map((tx) => tx.hash))
      parent = block.hash
    }
    expect(truth.transactions).toBe(testChainParams.blocks * testChainParams.txPerBlock)
  })

  it('has a ground truth that an independent recount of the bytes reproduces', () => {
    const recounted = recount(chain)
    expect(Object.keys(truth.totals).length).toBeGreaterThan(20)
    expect(recounted.totals).toEqual(truth.totals)
    expect(recounted.malformed).toBe(truth.malformed)
    expect(recounted.rows).toBe(truth.attributionRows)
    // the test chain is dense enough to hold every case the indexer must handle
    expect(truth.attributedTransactions.reverted).toBeGreaterThan(0)
    expect(truth.attributedUserOperations.success).toBeGreaterThan(0)
    expect(truth.attributedUserOperations.reverted).toBeGreaterThan(0)
    expect(new Set(truth.units.map((unit) => unit.schemaId))).toEqual(new Set([0, 1, 2]))
  })

  it('has every transaction\'s receipt in its block\'s receipts, and indexes the candidates\' by hash', () => {
    let indexed = 0
    for (let number = 0; number <= chain.lastBlock; number++) {
      const block = JSON.parse(chain.fullBlock(number).toString()) as Block
      const receipts = JSON.parse(chain.blockReceipts(number).toString()) as Array<Receipt & { transactionHash: string; blockHash: string }>
      expect(receipts.map((r) => r.transactionHash)).toEqual(block.transactions.map((tx) => tx.hash))
      expect(new Set(receipts.map((r) => r.blockHash))).toEqual(new Set(number === 0 ? [] : [block.hash]))
      if (receipts.length > 0) expect(BigInt(receipts.at(-1)!.cumulativeGasUsed)).toBe(BigInt(block.gasUsed))
      receipts.forEach((receipt, i) => {
        const stored = chain.storedReceipt(block.transactions[i]!.hash)
        if (!stored) return
        indexed++
        expect(JSON.parse(stored.toString())).toEqual(receipt)
      })
    }
    expect(indexed).toBe(chain.meta.candidateReceipts)
    // every attributed transaction and every bundle is a candidate
    for (const unit of truth.units) expect(chain.storedReceipt(unit.txHash), unit.txHash).toBeDefined()
  })

  it('puts every log of a receipt into the receipt bloom and the block bloom', () => {
    const receipt = JSON.parse(chain.storedReceipt(truth.units.find((u) => u.kind === 'userOperation')!.txHash)!.toString()) as Receipt & {
      logsBloom: string
      blockNumber: string
    }
    const block = JSON.parse(chain.headerBlock(Number(receipt.blockNumber)).toString()) as Block
    const bits = (hex: string) => BigInt(hex)
    expect(bits(receipt.logsBloom)).not.toBe(0n)
    expect(bits(block.logsBloom) & bits(receipt.logsBloom)).toBe(bits(receipt.logsBloom))
  })

  it('is generated byte for byte the same from the same parameters', () => {
    const dirs = [mkdtempSync(`${tmpdir()}/chain-a-`), mkdtempSync(`${tmpdir()}/chain-b-`)]
    try {
      const digests = dirs.map((dir) => {
        generateChain({ ...testChainParams, blocks: 3 }, dir)
        return ['full.json', 'header.json', 'receipts.json', 'candidates.tsv', 'truth.json'].map((file) =>
          createHash('sha256').update(readFileSync(`${dir}/${file}`)).digest('hex'),
        )
      })
      expect(digests[0]).toEqual(digests[1])
    } finally {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('dense chain', () => {
  const dir = mkdtempSync(`${tmpdir()}/chain-dense-`)
  generateChain({ ...denseChainParams, blocks: 6, txPerBlock: 100 }, dir)
  const chain = openChain(dir)
  const truth = chain.truth()
  afterAll(() => {
    chain.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('attributes about half the transactions, through every EntryPoint version too, with reverts and a long tail of codes', () => {
    const attributedTransactions = new Set(truth.units.map((unit) => unit.txHash)).size
    expect(attributedTransactions / truth.transactions).toBeGreaterThan(0.4)
    expect(attributedTransactions / truth.transactions).toBeLessThan(0.6)
    const bundledTo = new Set(truth.units.filter((unit) => unit.kind === 'userOperation').map((unit) => {
      const block = JSON.parse(chain.fullBlock(unit.block).toString()) as Block
      return block.transactions.find((tx) => tx.hash === unit.txHash)!.to
    }))
    expect(bundledTo).toEqual(new Set(entryPointAddresses.map((address) => address.toLowerCase())))
    expect(truth.attributedTransactions.reverted).toBeGreaterThan(0)
    expect(truth.attributedUserOperations.reverted).toBeGreaterThan(0)
    // a heavy head and a long tail: the numbered apps beyond the 150 of the everyday chain appear
    expect(Object.keys(truth.totals).some((code) => /^app_/.test(code) && Number.parseInt(code.slice(4), 36) >= 150)).toBe(true)
  })

  it('has a ground truth that an independent recount of the bytes reproduces', () => {
    const recounted = recount(chain)
    expect(recounted.totals).toEqual(truth.totals)
    expect(recounted.malformed).toBe(truth.malformed)
    expect(recounted.rows).toBe(truth.attributionRows)
  })
})
