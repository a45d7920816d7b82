import { parseGwei, type Address, type Hex, type TransactionReceipt } from 'viem'
import type { DevnetClient } from './client.js'

/**
 * Fees far above what an almost empty devnet block charges, so a transaction
 * sent now is still valid a few blocks later, and fixed so nothing has to
 * ask the node for a fee estimate first.
 */
export const DEVNET_FEES = { maxFeePerGas: parseGwei('50'), maxPriorityFeePerGas: parseGwei('1') } as const

/**
 * A dev account of the node (unlocked, so anvil signs) with a locally counted
 * nonce. Counting locally is what allows many transactions from one account
 * into one block without a round trip each, and keeps their order.
 */
export type Sender = {
  address: Address
  /** The nonce for the next transaction, reserved by this call. */
  takeNonce(): number
  /** Re-reads the nonce from the node (after a failure left the local count unsure). */
  resync(): Promise<void>
}

export async function createSender(client: DevnetClient, address: Address): Promise<Sender> {
  let nonce = await client.getTransactionCount({ address, blockTag: 'pending' })
  return {
    address,
    takeNonce: () => nonce++,
    async resync() {
      nonce = await client.getTransactionCount({ address, blockTag: 'pending' })
    },
  }
}

export type SendParameters = { from: Sender; to: Address; data?: Hex; value?: bigint; gas: bigint; dataSuffix?: Hex }

/**
 * Sends through `eth_sendTransaction` with gas and nonce given, so the node
 * neither estimates (a reverting call must still be mined) nor picks a nonce.
 * The suffix goes through viem's own `dataSuffix`, as an app would attach it.
 */
export function sendDevnetTransaction(client: DevnetClient, parameters: SendParameters): Promise<Hex> {
  const { from, to, data, value, gas, dataSuffix } = parameters
  return client.sendTransaction({
    account: from.address,
    chain: null,
    to,
    data,
    value,
    gas,
    nonce: from.takeNonce(),
    dataSuffix,
    ...DEVNET_FEES,
  })
}

/** Gas for a call to an account without code: intrinsic cost with EIP-7623's calldata floor, and room to spare. */
export function transferGas(calldataBytes: number): bigint {
  return BigInt(30_000 + 48 * calldataBytes)
}

/** The node's dev accounts, each with one job so their nonces never interleave. */
export type DevnetWallets = {
  /** Deploys contracts and funds smart accounts. */
  deployer: Sender
  /** Submits UserOperation bundles (and collects their fees). */
  bundler: Sender
  /** Send the plain and attributed transactions, in turn. */
  traffic: Sender[]
}

export async function createDevnetWallets(client: DevnetClient): Promise<DevnetWallets> {
  const addresses = await client.getAddresses()
  if (addresses.length < 3) throw new Error(`the node has ${addresses.length} dev accounts; the devnet needs at least 3`)
  const [deployer, bundler, ...traffic] = await Promise.all(addresses.map((address) => createSender(client, address)))
  return { deployer: deployer!, bundler: bundler!, traffic }
}

/**
 * The receipt of a sent transaction while the node mines on every
 * transaction. A transaction can stay in anvil's pool although it is ready
 * until something else is sent or mined (foundry-rs/foundry#10122
 * describes such a race), so a block is mined after each quiet second: it
 * takes in whatever the pool holds ready, and an extra block at set-up
 * changes nothing anyone counts.
 */
export async function waitForReceipt(client: DevnetClient, hash: Hex, timeoutMs = 60_000): Promise<TransactionReceipt> {
  const deadline = Date.now() + timeoutMs
  let nudgeAt = Date.now() + 1_000
  for (;;) {
    const receipt = await client.getTransactionReceipt({ hash }).catch(() => undefined)
    if (receipt) return receipt
    if (Date.now() > deadline) throw new Error(`transaction ${hash} not mined after ${timeoutMs} ms`)
    if (Date.now() >= nudgeAt) {
      await client.mine({ blocks: 1 })
      nudgeAt = Date.now() + 1_000
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
