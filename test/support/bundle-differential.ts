import {
  decodeEventLog,
  decodeFunctionData,
  encodeAbiParameters,
  encodeEventTopics,
  encodeFunctionData,
  getAddress,
  type Address,
  type Hex,
} from 'viem'
import { entryPoint06Abi, entryPoint07Abi } from 'viem/account-abstraction'
import { MARKER_HEX } from '../../src/attribution/marker.js'
import { extractUserOperations, readUserOperations, userOperationEventAbi, userOperationOutcomes } from '../../src/attribution/userops.js'
import type { Random } from '../../devnet/random.js'

/**
 * Differential oracle of the EntryPoint reader (src/attribution/bundle-calldata.ts)
 * against viem: bundles encoded by viem (EntryPoint 0.6 and 0.7/0.8,
 * handleOps and handleAggregatedOps), and the same bundles mutated (a
 * flipped hex digit, an offset or length rewritten, cut short, upper case),
 * must give exactly the ops and UserOperationEvent outcomes viem's decoders
 * give — including none when viem refuses.
 */

const bundleAbi = [...entryPoint06Abi, ...entryPoint07Abi].filter(
  (item) => item.type === 'function' && (item.name === 'handleOps' || item.name === 'handleAggregatedOps'),
)

const int = (random: Random, max: number) => Math.floor(random.next() * max)
const hex = (random: Random, bytes: number) => Array.from({ length: bytes * 2 }, () => '0123456789abcdef'[int(random, 16)]).join('')
const address = (random: Random): Address => getAddress(`0x${hex(random, 20)}`)
const bytes = (random: Random, max: number): Hex => `0x${hex(random, int(random, max))}`

function callData(random: Random): Hex {
  const roll = random.next()
  if (roll < 0.4) return `0x${hex(random, int(random, 40))}0762617365617070070080218021802180218021802180218021` as Hex
  if (roll < 0.5) return `0x${MARKER_HEX}`
  return bytes(random, 80)
}

/** The fields both versions start with, in their order (random draws stay in field order). */
function opHead(random: Random) {
  return { sender: address(random), nonce: BigInt(`0x${hex(random, 1 + int(random, 32))}`), initCode: bytes(random, 40), callData: callData(random) }
}

function op06(random: Random) {
  return {
    ...opHead(random),
    callGasLimit: BigInt(int(random, 1e9)),
    verificationGasLimit: BigInt(int(random, 1e9)),
    preVerificationGas: BigInt(int(random, 1e9)),
    maxFeePerGas: BigInt(int(random, 1e9)),
    maxPriorityFeePerGas: BigInt(int(random, 1e9)),
    paymasterAndData: bytes(random, 60),
    signature: bytes(random, 70),
  }
}

function op07(random: Random) {
  return {
    ...opHead(random),
    accountGasLimits: `0x${hex(random, 32)}` as Hex,
    preVerificationGas: BigInt(int(random, 1e9)),
    gasFees: `0x${hex(random, 32)}` as Hex,
    paymasterAndData: bytes(random, 60),
    signature: bytes(random, 70),
  }
}

/** A bundle as viem encodes it: either version, either function, 0 to 4 ops (in 1 to 3 groups). */
function encodedBundle(random: Random): Hex {
  const v06 = random.next() < 0.5
  const ops = (count: number) => Array.from({ length: count }, () => (v06 ? op06(random) : op07(random)))
  const abi = v06 ? entryPoint06Abi : entryPoint07Abi
  const beneficiary = address(random)
  if (random.next() < 0.7) return encodeFunctionData({ abi, functionName: 'handleOps', args: [ops(int(random, 5)) as never, beneficiary] })
  const groups = Array.from({ length: 1 + int(random, 3) }, () => ({ userOps: ops(int(random, 3)), aggregator: address(random), signature: bytes(random, 50) }))
  return encodeFunctionData({ abi, functionName: 'handleAggregatedOps', args: [groups as never, beneficiary] })
}

/** A valid bundle, or one mutated in a way that often breaks its offsets, lengths or letter case. */
export function randomBundleInput(random: Random): string {
  const input = encodedBundle(random)
  const roll = random.next()
  if (roll < 0.4) return input
  const words = Math.floor((input.length - 10) / 64)
  const at = 10 + 64 * int(random, Math.max(1, words))
  if (roll < 0.6) {
    // an offset or length word rewritten to a small value, a large one or past 2^64
    const value = random.pick([int(random, 64 * 32), int(random, 2 ** 31), 2 ** 53 + int(random, 100)]).toString(16).padStart(64, '0')
    const word = random.next() < 0.2 ? `1${value.slice(1)}` : value
    return `${input.slice(0, at)}${word}${input.slice(at + 64)}`
  }
  if (roll < 0.75) {
    const i = 10 + int(random, input.length - 10)
    return `${input.slice(0, i)}${'0123456789abcdef'[int(random, 16)]}${input.slice(i + 1)}`
  }
  if (roll < 0.9) return input.slice(0, 10 + 2 * int(random, (input.length - 10) / 2))
  return random.next() < 0.5 ? input.toUpperCase().replace('0X', '0x') : `${input}0`
}

type Op = { index: number; sender: string; nonce: bigint; callData: string; aggregator?: string }

const lower = (address: string) => address.toLowerCase()

/** The ops viem decodes from `input`, numbered in calldata order, addresses lowercase as the index keeps them, or undefined when it refuses. */
function viemOps(input: string): Op[] | undefined {
  let decoded
  try {
    decoded = decodeFunctionData({ abi: bundleAbi, data: input as Hex })
  } catch {
    return undefined
  }
  type RawOp = { sender: string; nonce: bigint; callData: string }
  const ops: Op[] = []
  if (decoded.functionName === 'handleOps') {
    for (const op of decoded.args[0] as readonly RawOp[]) ops.push({ index: ops.length, sender: lower(op.sender), nonce: op.nonce, callData: op.callData })
  } else {
    for (const group of decoded.args[0] as readonly { userOps: readonly RawOp[]; aggregator: string }[]) {
      for (const op of group.userOps) ops.push({ index: ops.length, sender: lower(op.sender), nonce: op.nonce, callData: op.callData, aggregator: lower(group.aggregator) })
    }
  }
  return ops
}

const show = (value: unknown) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))

/**
 * Why the indexer's reading of a bundle differs from viem's, or undefined
 * when it does not; `fast` says whether the fast reader read it itself
 * (rather than leaving it to viem), so a run can show it is not trivial.
 */
export function bundleDisagreement(input: string): { problem?: string; fast: boolean } {
  let ours: Op[] | undefined
  let fast: Op[] | undefined
  try {
    fast = readUserOperations(input as Hex)
    ours = extractUserOperations(input as Hex)
  } catch (error) {
    return { problem: `threw: ${(error as Error).message}`, fast: false }
  }
  const reference = show(viemOps(input))
  if (fast && show(fast) !== reference) return { problem: `fast reader ${show(fast).slice(0, 300)} ≠ viem ${reference.slice(0, 300)}`, fast: true }
  return show(ours) === reference ? { fast: !!fast } : { problem: `ours ${show(ours).slice(0, 300)} ≠ viem ${reference.slice(0, 300)}`, fast: !!fast }
}

/** A UserOperationEvent log as an EntryPoint emits it, sometimes mutated (success 2, data cut or extended, a topic missing, capitals). */
export function randomEventLog(random: Random, entryPoint: Address): { address: string; topics: string[]; data: string } {
  const topics = encodeEventTopics({
    abi: userOperationEventAbi,
    eventName: 'UserOperationEvent',
    args: { userOpHash: `0x${hex(random, 32)}`, sender: address(random), paymaster: address(random) },
  }) as string[]
  let data: string = encodeAbiParameters(
    [{ type: 'uint256' }, { type: 'bool' }, { type: 'uint256' }, { type: 'uint256' }],
    [BigInt(`0x${hex(random, 1 + int(random, 32))}`), random.next() < 0.8, BigInt(int(random, 1e15)), BigInt(int(random, 1e7))],
  )
  const roll = random.next()
  if (roll < 0.1) data = `${data.slice(0, 66)}${'2'.padStart(64, '0')}${data.slice(130)}`
  else if (roll < 0.2) data = data.slice(0, 2 + 2 * int(random, 128))
  else if (roll < 0.25) data = `${data}${hex(random, 32)}`
  else if (roll < 0.3) topics.pop()
  else if (roll < 0.35) topics[2] = topics[2]!.toUpperCase().replace('0X', '0x')
  return { address: entryPoint, topics, data }
}

/** Why the indexer's reading of a receipt's UserOperationEvents differs from viem's decodeEventLog, or undefined. */
export function eventDisagreement(logs: Array<{ address: string; topics: string[]; data: string }>, entryPoint: Address): string | undefined {
  const ours = userOperationOutcomes(logs, entryPoint)
  const reference = new Map<string, unknown>()
  for (const log of logs) {
    try {
      const { args } = decodeEventLog({ abi: userOperationEventAbi, topics: log.topics as [Hex, ...Hex[]], data: log.data as Hex })
      const { userOpHash, sender, nonce, success, actualGasCost, actualGasUsed } = args
      reference.set(`${sender.toLowerCase()}:${nonce}`, { userOpHash, success, actualGasCost, actualGasUsed })
    } catch {
      // refused by viem: not an outcome
    }
  }
  const a = show([...ours])
  const b = show([...reference])
  return a === b ? undefined : `ours ${a.slice(0, 300)} ≠ viem ${b.slice(0, 300)}`
}
