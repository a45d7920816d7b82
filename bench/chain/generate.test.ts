import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { decodeEventLog, decodeFunctionData, type Hex } from 'viem'
import { entryPoint06Abi, entryPoint07Abi, entryPoint08Abi } from 'viem/account-abstraction'
import { afterAll, describe, expect, it } from 'vitest'
import { entryPointAddresses, entryPointVersions, type EntryPointVersion } from '../../devnet/entry-points.js'
import { totalsByCode, type ExpectedAttribution, type ExpectedIndex } from '../../devnet/ledger.js'
import { decodeAttribution } from '../../src/attribution/decode.js'
import { openChain, type Chain } from './files.js'
import { denseChainParams, ensureChain, generateChain } from './generate.js'
import { testChainParams } from './test-chain.js'

type Tx = { hash: string; to: string | null; input: Hex; blockNumber: string; transactionIndex: string }
type Block = { number: string; hash: string; parentHash: string; transactions: Tx[]; gasUsed: string; logsBloom: string }
type Receipt = { status: string; logs: Array<{ address: string; topics: [Hex, ...Hex[]]; data: Hex }>; cumulativeGasUsed: string }
type OperationEvent = { userOpHash: Hex; success: boolean }

const entryPointAbis = { '0.6': entryPoint06Abi, '0.7': entryPoint07Abi, '0.8': entryPoint08Abi } as const
const versionAt = (to: string | null): EntryPointVersion | undefined =>
  entryPointVersions.find((version) => entryPointAddresses[version].toLowerCase() === to)
const rowKey = (row: ExpectedAttribution) => `${row.txHash}:${row.userOpIndex}:${row.code}`
const sortedRows = (rows: readonly ExpectedAttribution[]) => [...rows].sort((a, b) => rowKey(a).localeCompare(rowKey(b)))

/**
 * Re-derives the expected index from the chain's bytes alone, the way an
 * indexer would: the project's decoder on transaction inputs, viem's ABI
 * decoding of bundles and their UserOperationEvent logs for operations. If
 * the ground truth the generator wrote disagrees with this, the benches
 * would verify the indexer against a wrong answer.
 */
function recount(chain: Chain): ExpectedIndex {
  const attributions: ExpectedAttribution[] = []
  const malformed: ExpectedIndex['malformed'] = []
  const add = (tx: Tx, input: Hex, unit: Pick<ExpectedAttribution, 'kind' | 'userOpIndex' | 'status'> & { userOpHash?: Hex }) => {
    const decoded = decodeAttribution(input)
    if (decoded.kind === 'malformed') malformed.push({ txHash: tx.hash as Hex, userOpIndex: unit.userOpIndex })
    if (decoded.kind !== 'attributed') return
    for (const code of decoded.codes) {
      attributions.push({
        chainId: chain.chainId,
        blockNumber: Number(tx.blockNumber),
        txHash: tx.hash as Hex,
        ...unit,
        code,
        schemaId: decoded.schemaId as 0 | 1 | 2,
        suffixGas: decoded.suffixGas,
      })
    }
  }
  for (let number = 0; number <= chain.lastBlock; number++) {
    const block = JSON.parse(chain.fullBlock(number).toString()) as Block
    for (const tx of block.transactions) {
      const version = versionAt(tx.to)
      if (!version) {
        const receipt = JSON.parse(chain.blockReceipts(number).toString())[Number(tx.transactionIndex)] as Receipt
        add(tx, tx.input, { kind: 'transaction', userOpIndex: -1, status: receipt.status === '0x1' ? 'success' : 'reverted' })
        continue
      }
      const abi = entryPointAbis[version]
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
        .map((event) => event.args as OperationEvent)
      expect(events).toHaveLength(ops.length)
      ops.forEach((op, i) => {
        add(tx, op.callData, { kind: 'userOperation', userOpIndex: i, userOpHash: events[i]!.userOpHash, status: events[i]!.success ? 'success' : 'reverted' })
      })
    }
  }
  return { attributions, malformed }
}

describe('generated chain', () => {
  const chain = openChain(ensureChain(testChainParams))
  const truth = chain.truth()
  const expected = chain.expectedIndex()
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

  it('has a ground truth that an independent recount of the bytes reproduces, row by row', () => {
    const recounted = recount(chain)
    expect(sortedRows(recounted.attributions)).toEqual(sortedRows(expected.attributions))
    expect(recounted.malformed).toEqual(expected.malformed)
    // the summary a bench checks follows from the rows, by the devnet's own rule
    expect(truth.totals).toEqual(totalsByCode(expected))
    expect(truth.attributionRows).toBe(expected.attributions.length)
    expect(truth.malformed).toBe(expected.malformed.length)
    expect(Object.keys(truth.totals).length).toBeGreaterThan(20)
    // the test chain is dense enough to hold every case the indexer must handle
    expect(truth.attributedTransactions.reverted).toBeGreaterThan(0)
    expect(truth.attributedUserOperations.success).toBeGreaterThan(0)
    expect(truth.attributedUserOperations.reverted).toBeGreaterThan(0)
    expect(new Set(expected.attributions.map((row) => row.schemaId))).toEqual(new Set([0, 1, 2]))
  })

  it("has every transaction's receipt in its block's receipts, and indexes the candidates' by hash", () => {
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
    // every attributed transaction, every bundle and every malformed suffix is a candidate
    for (const { txHash } of [...expected.attributions, ...expected.malformed]) expect(chain.storedReceipt(txHash), txHash).toBeDefined()
  })

  it('puts every log of a receipt into the receipt bloom and the block bloom', () => {
    const bundled = expected.attributions.find((row) => row.kind === 'userOperation')!
    const receipt = JSON.parse(chain.storedReceipt(bundled.txHash)!.toString()) as Receipt & { logsBloom: string; blockNumber: string }
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
        return ['full.json', 'header.json', 'receipts.json', 'candidates.tsv', 'attributions.ndjson', 'malformed.json', 'truth.json'].map((file) =>
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
  generateChain({ ...denseChainParams, blocks: 4, txPerBlock: 80 }, dir)
  const chain = openChain(dir)
  const truth = chain.truth()
  const expected = chain.expectedIndex()
  afterAll(() => {
    chain.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('attributes about half the transactions, through every EntryPoint version too, with reverts and a long tail of codes', () => {
    const attributedTransactions = new Set(expected.attributions.map((row) => row.txHash)).size
    expect(attributedTransactions / truth.transactions).toBeGreaterThan(0.4)
    expect(attributedTransactions / truth.transactions).toBeLessThan(0.6)
    const bundledTo = new Set(
      expected.attributions
        .filter((row) => row.kind === 'userOperation')
        .map((row) => (JSON.parse(chain.fullBlock(row.blockNumber).toString()) as Block).transactions.find((tx) => tx.hash === row.txHash)!.to),
    )
    expect(bundledTo).toEqual(new Set(Object.values(entryPointAddresses).map((address) => address.toLowerCase())))
    expect(truth.attributedTransactions.reverted).toBeGreaterThan(0)
    expect(truth.attributedUserOperations.reverted).toBeGreaterThan(0)
    // a heavy head and a long tail: numbered apps beyond the 150 of the everyday chain appear
    expect(Object.keys(truth.totals).some((code) => /^app_/.test(code) && Number.parseInt(code.slice(4), 36) >= 150)).toBe(true)
  })

  it('has a ground truth that an independent recount of the bytes reproduces, row by row', () => {
    const recounted = recount(chain)
    expect(sortedRows(recounted.attributions)).toEqual(sortedRows(expected.attributions))
    expect(recounted.malformed).toEqual(expected.malformed)
    expect(truth.totals).toEqual(totalsByCode(expected))
  })
})
