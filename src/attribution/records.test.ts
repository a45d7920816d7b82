import { setFlagsFromString } from 'node:v8'
import { Attribution } from 'ox/erc8021'
import { concat, encodeAbiParameters, encodeEventTopics, encodeFunctionData, getAddress, pad, type Address, type Hex } from 'viem'
import { entryPoint06Abi, entryPoint06Address, entryPoint07Abi, entryPoint07Address } from 'viem/account-abstraction'
import { describe, expect, it } from 'vitest'
import { attributionsOf, detectCandidate, malformedOf, needsReceipt, receiptLogsNeeded } from './records.js'
import type { RawTransaction } from '../rpc/objects.js'
import { slimReceipt } from '../rpc/scan/receipt-read.js'
import { entryPointSet, extractUserOperations, readUserOperations } from './userops.js'

const entryPoints = entryPointSet([entryPoint06Address, entryPoint07Address])
const sender = (n: number) => getAddress(pad(`0x${n.toString(16)}`, { size: 20 }))
const beneficiary = sender(999)
const block = { number: 7, hash: pad('0xb7', { size: 32 }), timestamp: 1_700_000_000 }
const suffix = (codes: string[]) => Attribution.toDataSuffix({ codes })
const executeCall = '0xb61d27f6' as Hex

function packedOp(n: number, callData: Hex) {
  return {
    sender: sender(n),
    nonce: BigInt(n),
    initCode: '0x' as Hex,
    callData,
    accountGasLimits: pad('0x01', { size: 32 }),
    preVerificationGas: 1n,
    gasFees: pad('0x01', { size: 32 }),
    paymasterAndData: '0x' as Hex,
    signature: '0x' as Hex,
  }
}

function v06Op(n: number, callData: Hex) {
  return {
    sender: sender(n),
    nonce: BigInt(n),
    initCode: '0x' as Hex,
    callData,
    callGasLimit: 1n,
    verificationGasLimit: 1n,
    preVerificationGas: 1n,
    maxFeePerGas: 1n,
    maxPriorityFeePerGas: 1n,
    paymasterAndData: '0x' as Hex,
    signature: '0x' as Hex,
  }
}

function userOperationEvent(entryPoint: Address, n: number, success: boolean) {
  const topics = encodeEventTopics({
    abi: entryPoint07Abi,
    eventName: 'UserOperationEvent',
    args: { userOpHash: pad(`0x${(n + 0xaa).toString(16)}`, { size: 32 }), sender: sender(n), paymaster: sender(0) },
  }) as Hex[]
  const data = encodeAbiParameters(
    [{ type: 'uint256' }, { type: 'bool' }, { type: 'uint256' }, { type: 'uint256' }],
    [BigInt(n), success, 1000n + BigInt(n), 100n],
  )
  return { address: entryPoint, topics, data }
}

const tx = (input: Hex, to: Address | null): RawTransaction => ({
  hash: pad('0x1234', { size: 32 }),
  from: sender(500),
  to,
  input,
  transactionIndex: '0x3',
})

describe('extractUserOperations', () => {
  it('reads EntryPoint 0.7/0.8 handleOps', () => {
    const input = encodeFunctionData({ abi: entryPoint07Abi, functionName: 'handleOps', args: [[packedOp(1, '0x'), packedOp(2, executeCall)], beneficiary] })
    const ops = extractUserOperations(input)
    expect(ops?.map((op) => [op.index, op.sender, op.nonce, op.callData])).toEqual([
      [0, sender(1), 1n, '0x'],
      [1, sender(2), 2n, executeCall],
    ])
  })

  it('reads EntryPoint 0.6 handleOps', () => {
    const input = encodeFunctionData({ abi: entryPoint06Abi, functionName: 'handleOps', args: [[v06Op(3, executeCall)], beneficiary] })
    expect(extractUserOperations(input)?.[0]).toMatchObject({ index: 0, sender: sender(3), nonce: 3n })
  })

  it('reads handleAggregatedOps of both generations, numbering ops across groups', () => {
    const aggregator = sender(77)
    const input07 = encodeFunctionData({
      abi: entryPoint07Abi,
      functionName: 'handleAggregatedOps',
      args: [[{ userOps: [packedOp(1, '0x'), packedOp(2, '0x')], aggregator, signature: '0x' }, { userOps: [packedOp(3, '0x')], aggregator, signature: '0x' }], beneficiary],
    })
    // addresses come lowercase, as the index stores them
    expect(extractUserOperations(input07)?.map((op) => [op.index, op.nonce, op.aggregator])).toEqual([
      [0, 1n, aggregator.toLowerCase()],
      [1, 2n, aggregator.toLowerCase()],
      [2, 3n, aggregator.toLowerCase()],
    ])
    const input06 = encodeFunctionData({
      abi: entryPoint06Abi,
      functionName: 'handleAggregatedOps',
      args: [[{ userOps: [v06Op(4, '0x')], aggregator, signature: '0x' }], beneficiary],
    })
    expect(extractUserOperations(input06)?.[0]).toMatchObject({ index: 0, nonce: 4n, aggregator: aggregator.toLowerCase() })
  })

  it('returns undefined for other calldata', () => {
    expect(extractUserOperations('0xa9059cbb')).toBeUndefined()
    expect(extractUserOperations('0x')).toBeUndefined()
  })
})

describe('detectCandidate and attributionsOf', () => {
  it('ignores transactions without the marker', () => {
    expect(detectCandidate(tx('0xa9059cbb', sender(1)), entryPoints)).toBeUndefined()
    const plainBundle = encodeFunctionData({ abi: entryPoint07Abi, functionName: 'handleOps', args: [[packedOp(1, executeCall)], beneficiary] })
    expect(detectCandidate(tx(plainBundle, entryPoint07Address), entryPoints)).toBeUndefined()
  })

  it('attributes a transaction by its own suffix and status', () => {
    const candidate = detectCandidate(tx(concat(['0xa9059cbb', suffix(['app', 'wallet'])]), sender(1)), entryPoints)!
    expect(needsReceipt(candidate)).toBe(true)
    const records = attributionsOf(candidate, { transactionHash: candidate.tx.hash, status: '0x0', logs: [] }, block)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ kind: 'transaction', userOpIndex: -1, status: 'reverted', txIndex: 3, sender: sender(500).toLowerCase() })
    expect(records[0]!.attribution.codes).toEqual(['app', 'wallet'])
  })

  it('spells one wallet one way: a transaction from it and a UserOperation of it name the same lowercase sender', () => {
    // an EIP-7702 account sends both; unique senders are counted by the stored text, so a checksummed spelling
    // of either side would count the wallet twice
    const wallet = sender(0xabcdef)
    expect(wallet).not.toBe(wallet.toLowerCase())
    const own = detectCandidate({ ...tx(concat(['0xa9059cbb', suffix(['app'])]), sender(1)), from: wallet }, entryPoints)!
    const [fromTransaction] = attributionsOf(own, { transactionHash: own.tx.hash, status: '0x1', logs: [] }, block)
    const op = { ...packedOp(1, concat([executeCall, suffix(['app'])])), sender: wallet }
    const input = encodeFunctionData({ abi: entryPoint07Abi, functionName: 'handleOps', args: [[op], beneficiary] })
    const bundle = detectCandidate(tx(input, entryPoint07Address), entryPoints)!
    const [fromOperation] = attributionsOf(bundle, { transactionHash: bundle.tx.hash, status: '0x1', logs: [] }, block)
    expect([fromTransaction!.sender, fromOperation!.sender]).toEqual([wallet.toLowerCase(), wallet.toLowerCase()])
    // the same arguments with capitals are left to viem, which checksums: lowercase all the same
    const capitals = `${input.slice(0, 10)}${input.slice(10).toUpperCase()}` as Hex
    expect(readUserOperations(capitals)).toBeUndefined()
    expect(extractUserOperations(capitals)?.map((read) => read.sender)).toEqual([wallet.toLowerCase()])
  })

  it('attributes each suffixed UserOperation of a bundle to its event', () => {
    const input = encodeFunctionData({
      abi: entryPoint07Abi,
      functionName: 'handleOps',
      args: [[packedOp(1, concat([executeCall, suffix(['a'])])), packedOp(2, executeCall), packedOp(3, concat([executeCall, suffix(['b'])]))], beneficiary],
    })
    const candidate = detectCandidate(tx(input, entryPoint07Address), entryPoints)!
    const receipt = {
      transactionHash: candidate.tx.hash,
      status: '0x1' as Hex,
      logs: [userOperationEvent(entryPoint07Address, 1, true), userOperationEvent(entryPoint07Address, 2, true), userOperationEvent(entryPoint07Address, 3, false)],
    }
    const records = attributionsOf(candidate, receipt, block)
    expect(records.map((r) => [r.kind, r.userOpIndex, r.status, r.attribution.codes[0], r.sender, r.actualGasCost])).toEqual([
      ['userOperation', 0, 'success', 'a', sender(1), 1001n],
      ['userOperation', 2, 'reverted', 'b', sender(3), 1003n],
    ])
    expect(records[0]!.userOpHash).toBe(pad('0xab', { size: 32 }))
  })

  it('names the logs its records are built from: the attributed ops\' events of the bundle\'s EntryPoint, none of a plain transaction', () => {
    const plain = detectCandidate(tx(concat(['0xa9059cbb', suffix(['app'])]), sender(1)), entryPoints)!
    expect(receiptLogsNeeded(plain)).toBeUndefined()
    const input = encodeFunctionData({
      abi: entryPoint07Abi,
      functionName: 'handleOps',
      args: [[packedOp(1, concat([executeCall, suffix(['a'])])), packedOp(2, executeCall), packedOp(0xabc, concat([executeCall, suffix(['b'])]))], beneficiary],
    })
    const candidate = detectCandidate(tx(input, entryPoint07Address), entryPoints)!
    const events = [1, 2, 0xabc].map((n) => userOperationEvent(entryPoint07Address, n, true))
    // the same event from another contract, and the EntryPoint's events of ops not attributed, are not needed
    const receipt = { transactionHash: candidate.tx.hash, status: '0x1' as Hex, logs: [{ ...events[0]!, address: sender(5) }, ...events] }
    const slim = slimReceipt(receipt, receiptLogsNeeded(candidate))
    expect(slim.logs).toEqual([events[0], events[2]])
    expect(attributionsOf(candidate, slim, block)).toEqual(attributionsOf(candidate, receipt, block))
  })

  it('gives every record one hidden class, also once attributionsOf is optimized', () => {
    // a record built by object spread got a hidden class of its own in optimized code: kilobytes per record, and
    // every later reader of records megamorphic. V8's own check, as a function compiled after the flag is set.
    setFlagsFromString('--allow-natives-syntax')
    const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean
    const candidate = detectCandidate(tx(concat(['0xa9059cbb', suffix(['app'])]), sender(1)), entryPoints)!
    const receipt = { transactionHash: candidate.tx.hash, status: '0x1' as Hex, logs: [] }
    const first = attributionsOf(candidate, receipt, block)[0]!
    let last = first
    // enough calls for V8 to optimize attributionsOf (and the next ones to run optimized)
    for (let i = 0; i < 200_000; i++) last = attributionsOf(candidate, receipt, block)[0]!
    expect(haveSameMap(first, last)).toBe(true)
  })

  it('counts malformed suffixes of transactions and ops without needing a receipt', () => {
    const broken = '0x6162ff0080218021802180218021802180218021' as Hex
    const input = encodeFunctionData({ abi: entryPoint07Abi, functionName: 'handleOps', args: [[packedOp(1, broken)], beneficiary] })
    const candidate = detectCandidate(tx(input, entryPoint07Address), entryPoints)!
    expect(needsReceipt(candidate)).toBe(false)
    expect(malformedOf(candidate, block)).toEqual([{ txHash: candidate.tx.hash, userOpIndex: 0, blockNumber: 7, reason: expect.stringMatching(/before the start/) }])
  })

  it('a bundle stops past 256 suffixes or 1,024 codes, naming where, and counts what came before', () => {
    const ops = Array.from({ length: 300 }, (_, n) => packedOp(n + 1, concat([executeCall, suffix([`op${n}`])])))
    const input = encodeFunctionData({ abi: entryPoint07Abi, functionName: 'handleOps', args: [ops, beneficiary] })
    const candidate = detectCandidate(tx(input, entryPoint07Address), entryPoints)!
    expect(candidate.attributedOps).toHaveLength(256)
    expect(malformedOf(candidate, block)).toEqual([
      { txHash: candidate.tx.hash, userOpIndex: 256, blockNumber: 7, reason: 'bundle carries more than 256 suffixes: this UserOperation and the rest are not read' },
    ])
    // 40 ops of 32 codes: the 33rd op would pass 1,024 codes
    const wide = Array.from({ length: 40 }, (_, n) => packedOp(n + 1, concat([executeCall, suffix(Array.from({ length: 32 }, (_, i) => `o${n}_${i}`))])))
    const wideInput = encodeFunctionData({ abi: entryPoint07Abi, functionName: 'handleOps', args: [wide, beneficiary] })
    const wideCandidate = detectCandidate(tx(wideInput, entryPoint07Address), entryPoints)!
    expect(wideCandidate.attributedOps).toHaveLength(32)
    expect(malformedOf(wideCandidate, block).map((m) => [m.userOpIndex, m.reason])).toEqual([[32, expect.stringMatching(/more than 1024 codes/)]])
  })
})
