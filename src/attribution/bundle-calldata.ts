import type { Address, Hex } from 'viem'
import { detached } from './detached.js'

/**
 * The parts of EntryPoint calldata and logs the indexer reads, read straight
 * from their hex.
 *
 * viem's decoders turn the whole calldata into bytes, every field into a
 * value and every address into a checksum (a keccak each), and hash each ABI item's
 * signature on every call to find the function: 70 µs a bundle, most of the
 * indexer's UserOperation cost. This reader takes only each op's sender,
 * nonce and callData, and a UserOperationEvent's values, as slices of the
 * hex. It accepts only what viem decodes the same way — lowercase hex, every
 * offset and length inside the calldata as viem's cursor checks them, the
 * same byte budget — and answers `undefined` for anything else, so that the
 * caller decodes that input with viem: the result never differs from
 * viem's (test/differential checks it on valid and mutated bundles).
 */

/**
 * Where an op's fields sit in its tuple's head: EntryPoint 0.6's
 * `UserOperation` (11 fields) or 0.7/0.8's `PackedUserOperation` (9), both
 * starting with sender and nonce.
 */
export type OpLayout = {
  /** Words in the op's tuple head. */
  words: number
  /** Head positions of the op's `bytes` fields (initCode, callData, paymasterAndData, signature). */
  dynamic: readonly number[]
  callData: number
}

export type ReadOp = { sender: Address; nonce: bigint; callData: Hex; aggregator?: Address }

/** Past this many ops viem's cursor may refuse aliased encodings (its re-read limit): left to viem. */
const MAX_OPS = 256
const LOWERCASE_HEX = /^0x(?:[0-9a-f]{2})*$/

class Unusual extends Error {}

/** The argument bytes of a call (after the selector), as hex read by byte offset with viem's bounds. */
function argumentsOf(input: string) {
  const base = 10
  const size = (input.length - base) / 2
  let budget = size * 32
  /** Word at byte `offset`; viem's cursor also refuses to stand on the byte just past the end. */
  const word = (offset: number): string => {
    if (!(offset >= 0 && offset + 32 <= size)) throw new Unusual()
    return input.slice(base + offset * 2, base + offset * 2 + 64)
  }
  const position = (at: number) => {
    if (!(at >= 0 && at <= size - 1)) throw new Unusual()
  }
  /** A word read as an offset or length: anything past 2^64 cannot be inside the calldata. */
  const number = (offset: number): number => {
    const hex = word(offset)
    if (!hex.startsWith('000000000000000000000000000000000000000000000000')) throw new Unusual()
    return Number.parseInt(hex.slice(48), 16)
  }
  /**
   * Lowercase, as the index stores every address (the input is lowercase hex): no checksum, so no keccak.
   * Detached: a slice would be a view of the whole calldata, kept with the op's row until its commit.
   */
  const address = (offset: number): Address => detached(`0x${word(offset).slice(24)}`)
  /** A `bytes` field whose offset word is at `at`, relative to `base`. */
  const bytes = (at: number, relativeTo: number): Hex => {
    const start = relativeTo + number(at)
    position(start)
    const length = number(start)
    if (length === 0) return '0x'
    if (start + 32 + length > size) throw new Unusual()
    budget -= length
    if (budget < 0) throw new Unusual()
    return `0x${input.slice(base + (start + 32) * 2, base + (start + 32 + length) * 2)}`
  }
  /** Start of a dynamic array's elements whose offset word is at `at`, with its length. */
  const array = (at: number, relativeTo: number): { data: number; length: number } => {
    const start = relativeTo + number(at)
    position(start)
    const length = number(start)
    const data = start + 32
    if (data + 32 * length > size) throw new Unusual()
    // viem stands on the slot after the array's offset when it is done
    position(relativeTo + 32)
    return { data, length }
  }
  return { word, number, address, bytes, array, position }
}

type Arguments = ReturnType<typeof argumentsOf>

/** The ops of an `ops` array whose offset word is at `at` (relative to `relativeTo`). */
function readOps(args: Arguments, at: number, relativeTo: number, layout: OpLayout, out: ReadOp[], aggregator?: Address): void {
  const { data, length } = args.array(at, relativeTo)
  if (out.length + length > MAX_OPS) throw new Unusual()
  for (let i = 0; i < length; i++) {
    const start = data + args.number(data + 32 * i)
    args.position(start)
    args.word(start + 32 * (layout.words - 1))
    let callData: Hex = '0x'
    for (const field of layout.dynamic) {
      const value = args.bytes(start + 32 * field, start)
      if (field === layout.callData) callData = value
    }
    // done with the op, viem stands on the slot after its offset
    args.position(data + 32)
    const op: ReadOp = { sender: args.address(start), nonce: BigInt(`0x${args.word(start + 32)}`), callData }
    if (aggregator) op.aggregator = aggregator
    out.push(op)
  }
}

/**
 * The ops `readArguments` finds in `(first, beneficiary)` calldata — both
 * bundle functions take a dynamic first argument and an address — or
 * undefined when the input is not plainly readable (viem then decides).
 */
function readBundle(input: string, readArguments: (args: Arguments, ops: ReadOp[]) => void): ReadOp[] | undefined {
  if (!LOWERCASE_HEX.test(input) || input.length < 10 + 128) return undefined
  try {
    const args = argumentsOf(input)
    args.word(32)
    const ops: ReadOp[] = []
    readArguments(args, ops)
    return ops
  } catch (error) {
    if (error instanceof Unusual) return undefined
    throw error
  }
}

/** The ops of `handleOps(ops, beneficiary)` calldata. */
export function readHandleOps(input: string, layout: OpLayout): ReadOp[] | undefined {
  return readBundle(input, (args, ops) => readOps(args, 0, 0, layout, ops))
}

/** The ops of `handleAggregatedOps(opsPerAggregator, beneficiary)` calldata, each with its group's aggregator. */
export function readHandleAggregatedOps(input: string, layout: OpLayout): ReadOp[] | undefined {
  return readBundle(input, (args, ops) => {
    const groups = args.array(0, 0)
    for (let g = 0; g < groups.length; g++) {
      // UserOpsPerAggregator: (ops[], aggregator, signature)
      const start = groups.data + args.number(groups.data + 32 * g)
      args.position(start)
      const aggregator = args.address(start + 32)
      readOps(args, start, start, layout, ops, aggregator)
      args.bytes(start + 64, start)
      args.position(groups.data + 32)
    }
  })
}

export type ReadUserOperationEvent = {
  userOpHash: Hex
  /** Lowercase: outcomes are found by sender and nonce, so no checksum (a keccak) is spent on it. */
  sender: string
  nonce: bigint
  success: boolean
  actualGasCost: bigint
  actualGasUsed: bigint
}

const TOPIC = /^0x[0-9a-f]{64}$/
const EVENT_DATA = /^0x[0-9a-f]{256}$/

/**
 * `UserOperationEvent(userOpHash indexed, sender indexed, paymaster indexed,
 * nonce, success, actualGasCost, actualGasUsed)` from a log whose first topic
 * is the event's; null when viem would refuse it (a success word other than
 * 0 or 1), undefined when it is not plainly readable (viem then decides).
 */
export function readUserOperationEvent(topics: readonly string[], data: string): ReadUserOperationEvent | null | undefined {
  if (topics.length !== 4 || !topics.every((topic) => TOPIC.test(topic)) || !EVENT_DATA.test(data)) return undefined
  const word = (k: number) => `0x${data.slice(2 + 64 * k, 2 + 64 * (k + 1))}`
  const success = BigInt(word(1))
  if (success > 1n) return null
  return {
    // a view of the receipt's JSON otherwise, kept with the record until its range commits
    userOpHash: detached(topics[1] as Hex),
    sender: `0x${topics[2]!.slice(26)}`,
    nonce: BigInt(word(0)),
    success: success === 1n,
    actualGasCost: BigInt(word(2)),
    actualGasUsed: BigInt(word(3)),
  }
}
