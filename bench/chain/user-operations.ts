import {
  encodeAbiParameters,
  encodeEventTopics,
  encodeFunctionData,
  type Address,
  type Hex,
} from 'viem'
import {
  entryPoint06Abi,
  entryPoint07Abi,
  entryPoint08Abi,
  getUserOperationHash,
  toPackedUserOperation,
  type UserOperation,
} from 'viem/account-abstraction'
import { entryPointAddresses, type EntryPointVersion } from '../../devnet/entry-points.js'
import type { Random } from '../../devnet/random.js'

/**
 * ERC-4337 bundles as a bundler sends them: `handleOps` (and sometimes
 * `handleAggregatedOps`) encoded with the EntryPoint's real ABI, each
 * UserOperation hashed the way the EntryPoint hashes it, and the receipt
 * logs the EntryPoint emits (BeforeExecution, UserOperationRevertReason for
 * failures, UserOperationEvent for every operation), so the indexer reads
 * them exactly as it would on a real chain.
 */

const entryPoints = {
  '0.6': { address: entryPointAddresses['0.6'], abi: entryPoint06Abi },
  '0.7': { address: entryPointAddresses['0.7'], abi: entryPoint07Abi },
  '0.8': { address: entryPointAddresses['0.8'], abi: entryPoint08Abi },
} as const

export type OperationSpec = {
  sender: Address
  /** Full calldata of the operation, suffix included when attributed. */
  callData: Hex
  success: boolean
  paymaster: Address | undefined
}

export type LogSpec = { address: string; topics: Hex[]; data: Hex }

export type Bundle = {
  /** Lower case, as nodes return addresses. */
  entryPoint: string
  input: Hex
  operations: Array<{ userOpHash: Hex; sender: Address; nonce: bigint; success: boolean }>
  /** Logs of the bundle receipt in emission order (logIndex is assigned by the block). */
  logs: LogSpec[]
}

const ZERO_ADDRESS: Address = '0x0000000000000000000000000000000000000000'
/** `execute(address,uint256,bytes)` of common smart accounts. */
export const EXECUTE_SELECTOR = 'b61d27f6'

function randomAddress(random: Random): Address {
  return `0x${random.hex(20)}`
}

function gasFields(random: Random) {
  return {
    nonce: (BigInt(random.int(4)) << 64n) | BigInt(random.int(5000)),
    callGasLimit: BigInt(random.between(50_000, 400_000)),
    verificationGasLimit: BigInt(random.between(60_000, 200_000)),
    preVerificationGas: BigInt(random.between(40_000, 90_000)),
    maxFeePerGas: BigInt(random.between(1_000_000, 50_000_000)),
    maxPriorityFeePerGas: BigInt(random.between(1_000, 1_000_000)),
  }
}

/** EntryPoint 0.6 operation, every field present as `handleOps` encodes it. */
function operation06(random: Random, spec: OperationSpec) {
  return {
    sender: spec.sender,
    ...gasFields(random),
    initCode: '0x' as Hex,
    callData: spec.callData,
    paymasterAndData: (spec.paymaster ? `${spec.paymaster}${random.hex(64)}` : '0x') as Hex,
    signature: `0x${random.hex(65)}` as Hex,
  }
}

/** EntryPoint 0.7/0.8 operation, unpacked (viem packs it for the calldata and hashes it). */
function operation07(random: Random, spec: OperationSpec): UserOperation<'0.7'> {
  return {
    sender: spec.sender,
    ...gasFields(random),
    callData: spec.callData,
    signature: `0x${random.hex(65)}`,
    ...(spec.paymaster && {
      paymaster: spec.paymaster,
      paymasterVerificationGasLimit: BigInt(random.between(30_000, 100_000)),
      paymasterPostOpGasLimit: BigInt(random.between(10_000, 60_000)),
      paymasterData: `0x${random.hex(64)}` as Hex,
    }),
  }
}

function operationEventLogs(
  version: EntryPointVersion,
  entryPoint: string,
  operation: { userOpHash: Hex; sender: Address; nonce: bigint; success: boolean; paymaster: Address | undefined },
  random: Random,
): LogSpec[] {
  const { abi } = entryPoints[version]
  const logs: LogSpec[] = []
  if (!operation.success) {
    logs.push({
      address: entryPoint,
      topics: encodeEventTopics({
        abi,
        eventName: 'UserOperationRevertReason',
        args: { userOpHash: operation.userOpHash, sender: operation.sender },
      }) as Hex[],
      data: encodeAbiParameters([{ type: 'uint256' }, { type: 'bytes' }], [operation.nonce, `0x08c379a0${random.hex(68)}`]),
    })
  }
  const actualGasUsed = BigInt(random.between(60_000, 500_000))
  logs.push({
    address: entryPoint,
    topics: encodeEventTopics({
      abi,
      eventName: 'UserOperationEvent',
      args: { userOpHash: operation.userOpHash, sender: operation.sender, paymaster: operation.paymaster ?? ZERO_ADDRESS },
    }) as Hex[],
    data: encodeAbiParameters(
      [{ type: 'uint256' }, { type: 'bool' }, { type: 'uint256' }, { type: 'uint256' }],
      [operation.nonce, operation.success, actualGasUsed * BigInt(random.between(1_000_000, 20_000_000)), actualGasUsed],
    ),
  })
  return logs
}

/** An ERC-20 Transfer emitted by an operation's own call: noise the indexer must not mistake for an EntryPoint event. */
function transferLog(random: Random, from: Address): LogSpec {
  return {
    address: randomAddress(random),
    topics: [
      '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef',
      `0x${'0'.repeat(24)}${from.slice(2).toLowerCase()}`,
      `0x${'0'.repeat(24)}${random.hex(20)}`,
    ],
    data: `0x${'0'.repeat(40)}${random.hex(12)}`,
  }
}

export function buildBundle(
  random: Random,
  options: { chainId: number; version: EntryPointVersion; operations: OperationSpec[]; beneficiary: Address; aggregated: boolean },
): Bundle {
  const { version, chainId } = options
  const { address, abi } = entryPoints[version]
  const hashOf = (operation: UserOperation) =>
    getUserOperationHash({ chainId, entryPointAddress: address, entryPointVersion: version, userOperation: operation })

  let input: Hex
  let built: Array<{ spec: OperationSpec; nonce: bigint; userOpHash: Hex }>
  if (version === '0.6') {
    const operations = options.operations.map((spec) => operation06(random, spec))
    built = operations.map((operation, i) => ({ spec: options.operations[i]!, nonce: operation.nonce, userOpHash: hashOf(operation) }))
    input = encodeFunctionData({ abi: entryPoint06Abi, functionName: 'handleOps', args: [operations, options.beneficiary] })
  } else {
    const operations = options.operations.map((spec) => operation07(random, spec))
    built = operations.map((operation, i) => ({ spec: options.operations[i]!, nonce: operation.nonce, userOpHash: hashOf(operation) }))
    const packed = operations.map((operation) => toPackedUserOperation(operation))
    const versionAbi = abi as typeof entryPoint07Abi
    input = options.aggregated
      ? encodeFunctionData({
          abi: versionAbi,
          functionName: 'handleAggregatedOps',
          args: [[{ userOps: packed, aggregator: randomAddress(random), signature: `0x${random.hex(96)}` }], options.beneficiary],
        })
      : encodeFunctionData({ abi: versionAbi, functionName: 'handleOps', args: [packed, options.beneficiary] })
  }

  const entryPoint = address.toLowerCase()
  const logs: LogSpec[] = [
    { address: entryPoint, topics: encodeEventTopics({ abi, eventName: 'BeforeExecution' }) as Hex[], data: '0x' },
  ]
  const operations = built.map((b) => {
    const operation = {
      userOpHash: b.userOpHash,
      sender: b.spec.sender,
      nonce: b.nonce,
      success: b.spec.success,
      paymaster: b.spec.paymaster,
    }
    if (operation.success && random.chance(0.5)) logs.push(transferLog(random, operation.sender))
    logs.push(...operationEventLogs(version, entryPoint, operation, random))
    return { userOpHash: operation.userOpHash, sender: operation.sender, nonce: operation.nonce, success: operation.success }
  })
  return { entryPoint, input, operations, logs }
}
