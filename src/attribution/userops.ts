import { decodeEventLog, decodeFunctionData, getAddress, toEventSelector, toFunctionSelector, type Address, type Hex } from 'viem'
import { entryPoint06Abi, entryPoint07Abi } from 'viem/account-abstraction'
import { readHandleAggregatedOps, readHandleOps, readUserOperationEvent, type OpLayout, type ReadOp } from './bundle-calldata.js'
import { MARKER_HEX } from './marker.js'

/**
 * ERC-4337 bundles: finding UserOperations inside `handleOps` /
 * `handleAggregatedOps` calldata and joining them to the
 * `UserOperationEvent` logs of the bundle's receipt.
 *
 * EntryPoint 0.6 takes `UserOperation` structs; 0.7 and 0.8 take the same
 * `PackedUserOperation` struct (same selectors), so two ABIs cover all three.
 */
const bundleAbi = [
  ...entryPoint06Abi.filter((item) => item.type === 'function' && (item.name === 'handleOps' || item.name === 'handleAggregatedOps')),
  ...entryPoint07Abi.filter((item) => item.type === 'function' && (item.name === 'handleOps' || item.name === 'handleAggregatedOps')),
]

type AbiParameter = { type: string; name?: string; components?: readonly AbiParameter[] }

/** The op tuple's layout, from the ABI: `handleOps(ops[], …)` or `handleAggregatedOps((ops[], …)[], …)`. */
function opLayoutOf(item: (typeof bundleAbi)[number]): OpLayout {
  const first = item.inputs[0] as AbiParameter
  const fields = (item.name === 'handleOps' ? first.components : first.components?.[0]?.components) ?? []
  if (fields[0]?.type !== 'address' || fields[1]?.type !== 'uint256') throw new Error(`unexpected ${item.name} layout`)
  return {
    words: fields.length,
    dynamic: fields.flatMap((field, position) => (field.type === 'bytes' ? [position] : [])),
    callData: fields.findIndex((field) => field.name === 'callData'),
  }
}

/** Each bundle function's selector, with its op layout and the reader of its calldata. */
const bundleReaders = new Map(
  bundleAbi.map((item) => [toFunctionSelector(item), { layout: opLayoutOf(item), read: item.name === 'handleOps' ? readHandleOps : readHandleAggregatedOps }]),
)

/** The UserOperationEvent is identical in 0.6, 0.7 and 0.8. */
export const userOperationEventAbi = entryPoint07Abi.filter((item) => item.type === 'event' && item.name === 'UserOperationEvent')
/** UserOperationEvent's topic: the same event in EntryPoint 0.6, 0.7 and 0.8; `userOpHash` is its first indexed topic. */
export const USER_OPERATION_EVENT_TOPIC = toEventSelector(userOperationEventAbi[0]!)

export type BundledUserOperation = {
  /** Position in the bundle, counting across aggregator groups in calldata order. */
  index: number
  /** Lowercase, however the calldata spelled it: the index counts senders by their text (records.ts). */
  sender: Address
  nonce: bigint
  callData: Hex
  /** Set for ops of a `handleAggregatedOps` group. */
  aggregator?: Address
}

export type UserOperationOutcome = {
  userOpHash: Hex
  success: boolean
  actualGasCost: bigint
  actualGasUsed: bigint
}

type RawOp = { sender: Address; nonce: bigint; callData: Hex }

/**
 * EntryPoint addresses in every spelling a node may use (lowercase, as
 * JSON-RPC returns them, and EIP-55), so the per-transaction membership test
 * is one Set lookup with no lowercasing of every `to`.
 */
export function entryPointSet(entryPoints: readonly string[]): ReadonlySet<string> {
  return new Set(entryPoints.flatMap((address) => [address.toLowerCase(), getAddress(address)]))
}

/** True when the transaction calls an EntryPoint (in any letter case): its calldata may hold UserOperations. */
export function isBundle(to: string | null | undefined, entryPoints: ReadonlySet<string>): boolean {
  return !!to && (entryPoints.has(to) || entryPoints.has(to.toLowerCase()))
}

/**
 * Cheap pre-check before ABI-decoding a bundle: an op can only carry a suffix
 * if the marker appears somewhere in the bundle's calldata.
 */
export function mayCarryAttributedOps(input: string): boolean {
  return input.includes(MARKER_HEX)
}

/**
 * The UserOperations of a bundle transaction's calldata, or undefined when the
 * calldata is not a `handleOps`/`handleAggregatedOps` call. Never throws.
 */
export function extractUserOperations(input: Hex): BundledUserOperation[] | undefined {
  if (!bundleReaders.has(input.slice(0, 10) as Hex)) return undefined
  return readUserOperations(input) ?? decodeWithViem(input)
}

/** The fast reading of a bundle's calldata (bundle-calldata.ts), or undefined where it leaves the input to viem. */
export function readUserOperations(input: Hex): BundledUserOperation[] | undefined {
  const reader = bundleReaders.get(input.slice(0, 10) as Hex)
  return reader?.read(input, reader.layout)?.map((op, index) => bundled(op, index))
}

function bundled({ sender, nonce, callData, aggregator }: ReadOp, index: number): BundledUserOperation {
  const op: BundledUserOperation = { index, sender, nonce, callData }
  if (aggregator) op.aggregator = aggregator
  return op
}

/** What the fast reader leaves to viem: input in capitals, odd offsets, anything unusual. */
function decodeWithViem(input: Hex): BundledUserOperation[] | undefined {
  let decoded
  try {
    decoded = decodeFunctionData({ abi: bundleAbi, data: input })
  } catch {
    return undefined
  }
  const ops: BundledUserOperation[] = []
  const push = (op: RawOp, aggregator?: Address) => {
    const entry: BundledUserOperation = { index: ops.length, sender: lowercase(op.sender), nonce: op.nonce, callData: op.callData }
    if (aggregator) entry.aggregator = lowercase(aggregator)
    ops.push(entry)
  }
  if (decoded.functionName === 'handleOps') {
    for (const op of decoded.args[0] as readonly RawOp[]) push(op)
  } else {
    const groups = decoded.args[0] as readonly { userOps: readonly RawOp[]; aggregator: Address }[]
    for (const group of groups) for (const op of group.userOps) push(op, group.aggregator)
  }
  return ops
}

const lowercase = (address: Address) => address.toLowerCase() as Address

type LogLike = { address: string; topics: readonly string[]; data: string }

const operationKey = (sender: string, nonce: bigint) => `${sender.toLowerCase()}:${nonce.toString()}`

/**
 * UserOperationEvents emitted by `entryPoint` in a receipt, keyed by
 * sender and nonce — the pair that identifies an op inside its bundle.
 */
export function userOperationOutcomes(logs: readonly LogLike[], entryPoint: string): Map<string, UserOperationOutcome> {
  const outcomes = new Map<string, UserOperationOutcome>()
  const wanted = entryPoint.toLowerCase()
  for (const log of logs) {
    // other EntryPoint events (BeforeExecution, Deposited …) are skipped by topic: a failed decode builds an error
    if (log.topics[0] !== USER_OPERATION_EVENT_TOPIC || log.address.toLowerCase() !== wanted) continue
    const read = readUserOperationEvent(log.topics, log.data)
    if (read === null) continue
    if (read) {
      const { userOpHash, success, actualGasCost, actualGasUsed } = read
      outcomes.set(operationKey(read.sender, read.nonce), { userOpHash, success, actualGasCost, actualGasUsed })
      continue
    }
    try {
      const event = decodeEventLog({
        abi: userOperationEventAbi,
        topics: log.topics as [Hex, ...Hex[]],
        data: log.data as Hex,
      })
      const { userOpHash, sender, nonce, success, actualGasCost, actualGasUsed } = event.args
      outcomes.set(operationKey(sender, nonce), { userOpHash, success, actualGasCost, actualGasUsed })
    } catch {
      // another event of the EntryPoint (Deposited, BeforeExecution …)
    }
  }
  return outcomes
}

/** The outcome of one op, found by its sender and nonce. */
export function outcomeOf(outcomes: Map<string, UserOperationOutcome>, op: { sender: string; nonce: bigint }) {
  return outcomes.get(operationKey(op.sender, op.nonce))
}
