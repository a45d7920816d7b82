import {
  concat,
  decodeFunctionData,
  encodeFunctionData,
  keccak256,
  parseEther,
  parseEventLogs,
  stringToHex,
  type Address,
  type Hex,
  type Log,
  type PrivateKeyAccount,
} from 'viem'
import {
  entryPoint06Abi,
  entryPoint07Abi,
  entryPoint08Abi,
  getUserOperationHash,
  toPackedUserOperation,
  type UserOperation,
} from 'viem/account-abstraction'
import { privateKeyToAccount } from 'viem/accounts'
import type { DevnetClient } from './client.js'
import { simpleAccountAbi, simpleAccountFactoryAbi, type DevnetContracts } from './contracts.js'
import { entryPointVersions, type EntryPointVersion } from './entry-points.js'
import { DEVNET_FEES, sendDevnetTransaction, transferGas, waitForReceipt, type Sender } from './send.js'

export const entryPointAbis = { '0.6': entryPoint06Abi, '0.7': entryPoint07Abi, '0.8': entryPoint08Abi } as const

/** A SimpleAccount with what this process knows of it: whether its next operation must deploy it, and its next nonce. */
export type SmartAccount = {
  version: EntryPointVersion
  entryPoint: Address
  factory: Address
  address: Address
  owner: PrivateKeyAccount
  salt: bigint
  deployed: boolean
  /** Next nonce of key 0. */
  nonce: bigint
}

/**
 * Limits a bundler would estimate, fixed instead: generous enough for a
 * SimpleAccount created in the same operation and a short inner call. The
 * account pays for them (from its own balance), so they only need to fit.
 */
const GAS = {
  verificationWithDeployment: 700_000n,
  verification: 150_000n,
  call: 150_000n,
  preVerification: 60_000n,
} as const

/** The owner key of account `index` of `version`: derived from the seed so a devnet gets the same accounts every run. */
function ownerOf(seed: string, version: EntryPointVersion, index: number): PrivateKeyAccount {
  return privateKeyToAccount(keccak256(stringToHex(`erc8021-devnet-owner:${seed}:${version}:${index}`)))
}

export type CreateSmartAccountsOptions = {
  client: DevnetClient
  contracts: DevnetContracts
  /** Pays the accounts' funding. */
  funder: Sender
  perEntryPoint?: number
  seed?: string
  /** Balance each account is topped up to; it pays its operations' gas from it. */
  funding?: bigint
}

/**
 * SimpleAccounts for every EntryPoint version, at the addresses their
 * factories will create them at, funded with plain transfers. They are not
 * deployed here: the first operation of each carries the factory call
 * (initCode / factory + factoryData), the way a real wallet's first operation does.
 */
export async function createSmartAccounts(options: CreateSmartAccountsOptions): Promise<SmartAccount[]> {
  const { client, contracts, funder, perEntryPoint = 4, seed = 'default', funding = parseEther('10') } = options
  const slots = entryPointVersions.flatMap((version) =>
    Array.from({ length: perEntryPoint }, (_, index) => ({ version, index, owner: ownerOf(seed, version, index) })),
  )
  const accounts = await Promise.all(
    slots.map(async ({ version, index, owner }): Promise<SmartAccount> => {
      const { address: entryPoint, factory } = contracts.entryPoints[version]
      const salt = BigInt(index)
      const address = await client.readContract({ address: factory, abi: simpleAccountFactoryAbi, functionName: 'getAddress', args: [owner.address, salt] })
      const [code, nonce] = await Promise.all([
        client.getCode({ address }),
        client.readContract({ address: entryPoint, abi: entryPointAbis[version], functionName: 'getNonce', args: [address, 0n] }),
      ])
      return { version, entryPoint, factory, address, owner, salt, deployed: code !== undefined && code !== '0x', nonce }
    }),
  )
  const balances = await Promise.all(accounts.map((account) => client.getBalance({ address: account.address })))
  // one at a time, each mined before the next, as the deployments (contracts.ts)
  for (const account of accounts.filter((_, index) => balances[index]! < funding / 2n)) {
    await waitForReceipt(client, await sendDevnetTransaction(client, { from: funder, to: account.address, value: funding, gas: transferGas(0) }))
  }
  return accounts
}

/** Re-reads deployment and nonce from the chain, after a bundle whose outcome is unknown. */
export async function resyncSmartAccount(client: DevnetClient, account: SmartAccount): Promise<void> {
  const [code, nonce] = await Promise.all([
    client.getCode({ address: account.address }),
    client.readContract({ address: account.entryPoint, abi: entryPointAbis[account.version], functionName: 'getNonce', args: [account.address, 0n] }),
  ])
  account.deployed = code !== undefined && code !== '0x'
  account.nonce = nonce
}

export type AccountCall = { to: Address; value?: bigint; data?: Hex }

export type SignedUserOperation = {
  version: EntryPointVersion
  entryPoint: Address
  sender: Address
  nonce: bigint
  /** `execute(to, value, data)` followed by the suffix, exactly as signed and submitted. */
  callData: Hex
  userOperation: UserOperation
  hash: Hex
}

function factoryCall(account: SmartAccount): Hex {
  return encodeFunctionData({ abi: simpleAccountFactoryAbi, functionName: 'createAccount', args: [account.owner.address, account.salt] })
}

function unsignedOperation(account: SmartAccount, callData: Hex): UserOperation {
  const common = {
    sender: account.address,
    nonce: account.nonce,
    callData,
    callGasLimit: GAS.call,
    verificationGasLimit: account.deployed ? GAS.verification : GAS.verificationWithDeployment,
    preVerificationGas: GAS.preVerification,
    ...DEVNET_FEES,
    signature: '0x' as Hex,
  }
  if (account.version === '0.6') {
    return { ...common, initCode: account.deployed ? '0x' : concat([account.factory, factoryCall(account)]), paymasterAndData: '0x' }
  }
  return account.deployed ? common : { ...common, factory: account.factory, factoryData: factoryCall(account) }
}

/**
 * Builds and signs the account's next operation: SimpleAccount
 * `execute(to, value, data)` with `suffix` appended to the callData, which is
 * where ERC-8021 puts a UserOperation's attribution. Takes the account's next
 * nonce and assumes this operation deploys it when it is not deployed yet;
 * `resyncSmartAccount` corrects that if the bundle never lands.
 */
export async function signUserOperation({
  chainId,
  account,
  call,
  suffix,
}: {
  chainId: number
  account: SmartAccount
  call: AccountCall
  suffix?: Hex
}): Promise<SignedUserOperation> {
  const execute = encodeFunctionData({ abi: simpleAccountAbi, functionName: 'execute', args: [call.to, call.value ?? 0n, call.data ?? '0x'] })
  const callData = suffix ? concat([execute, suffix]) : execute
  const userOperation = unsignedOperation(account, callData)
  const hash = getUserOperationHash({ chainId, entryPointAddress: account.entryPoint, entryPointVersion: account.version, userOperation })
  // 0.6 and 0.7 SimpleAccounts recover from the EIP-191 hash; 0.8's hash is already EIP-712 typed data
  userOperation.signature = account.version === '0.8' ? await account.owner.sign({ hash }) : await account.owner.signMessage({ message: { raw: hash } })
  account.nonce += 1n
  account.deployed = true
  return { version: account.version, entryPoint: account.entryPoint, sender: account.address, nonce: userOperation.nonce, callData, userOperation, hash }
}

/** `handleOps(ops, beneficiary)` calldata in the encoding of the operations' EntryPoint version. */
export function encodeHandleOps(version: EntryPointVersion, operations: UserOperation[], beneficiary: Address): Hex {
  if (version === '0.6') {
    const ops = operations.map((op) => {
      const { sender, nonce, initCode = '0x', callData, callGasLimit, verificationGasLimit, preVerificationGas, maxFeePerGas, maxPriorityFeePerGas, paymasterAndData = '0x', signature } =
        op as UserOperation<'0.6'>
      return { sender, nonce, initCode, callData, callGasLimit, verificationGasLimit, preVerificationGas, maxFeePerGas, maxPriorityFeePerGas, paymasterAndData, signature }
    })
    return encodeFunctionData({ abi: entryPoint06Abi, functionName: 'handleOps', args: [ops, beneficiary] })
  }
  const packed = operations.map((op) => toPackedUserOperation(op))
  return encodeFunctionData({ abi: version === '0.7' ? entryPoint07Abi : entryPoint08Abi, functionName: 'handleOps', args: [packed, beneficiary] })
}

/** The callData of every operation in a `handleOps` or `handleAggregatedOps` input, in bundle order. */
export function operationCallData(version: EntryPointVersion, input: Hex): Hex[] {
  const { functionName, args } = decodeFunctionData({ abi: entryPointAbis[version], data: input })
  if (functionName === 'handleOps') return (args[0] as ReadonlyArray<{ callData: Hex }>).map((op) => op.callData)
  if (functionName === 'handleAggregatedOps') {
    return (args[0] as ReadonlyArray<{ userOps: ReadonlyArray<{ callData: Hex }> }>).flatMap((group) => group.userOps.map((op) => op.callData))
  }
  throw new Error(`not a bundle: ${functionName}`)
}

/**
 * Gas for the bundle transaction: every operation's limits (the EntryPoint
 * refuses to start an inner call it could not fund, failing the bundle with
 * AA95), the calldata at EIP-7623's floor price, and overhead.
 */
function bundleGas(operations: UserOperation[], calldata: Hex): bigint {
  const limits = operations.reduce((sum, op) => sum + op.verificationGasLimit + op.callGasLimit + op.preVerificationGas + 30_000n, 0n)
  return 150_000n + limits + BigInt(40 * ((calldata.length - 2) / 2))
}

/**
 * Submits operations of one EntryPoint version as one `handleOps` bundle,
 * sent by `bundler` as an ordinary transaction (we are our own bundler; no
 * bundler RPC is involved). The bundler is also the fee beneficiary.
 */
export function sendBundle(client: DevnetClient, { bundler, operations }: { bundler: Sender; operations: SignedUserOperation[] }): Promise<Hex> {
  const first = operations[0]
  if (!first) throw new Error('a bundle needs at least one operation')
  if (operations.some((op) => op.entryPoint !== first.entryPoint)) throw new Error('a bundle goes to one EntryPoint')
  const userOperations = operations.map((op) => op.userOperation)
  const data = encodeHandleOps(first.version, userOperations, bundler.address)
  return sendDevnetTransaction(client, { from: bundler, to: first.entryPoint, data, gas: bundleGas(userOperations, data) })
}

export type UserOperationOutcome = { userOpHash: Hex; sender: Address; nonce: bigint; success: boolean; logIndex: number }

/** The `UserOperationEvent`s an EntryPoint emitted in a receipt's logs (same event in 0.6, 0.7 and 0.8). */
export function userOperationOutcomes(logs: Log[], entryPoint: Address): UserOperationOutcome[] {
  const ours = logs.filter((log) => log.address.toLowerCase() === entryPoint.toLowerCase())
  return parseEventLogs({ abi: entryPoint07Abi, eventName: 'UserOperationEvent', logs: ours }).map((log) => ({
    userOpHash: log.args.userOpHash,
    sender: log.args.sender,
    nonce: log.args.nonce,
    success: log.args.success,
    logIndex: log.logIndex,
  }))
}
