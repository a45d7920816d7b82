import type { Hex } from 'viem'
import type { ChainConfig } from '../../src/config/chains.js'
import { startAnvil, type Anvil } from '../../devnet/anvil.js'
import { createDevnetClient, type DevnetClient } from '../../devnet/client.js'
import { deployContracts, type DevnetContracts } from '../../devnet/contracts.js'
import { entryPointVersions } from '../../devnet/entry-points.js'
import type { GroundTruth } from '../../devnet/ledger.js'
import { createDevnetWallets, type DevnetWallets } from '../../devnet/send.js'
import { createTrafficGenerator, type TrafficGenerator } from '../../devnet/traffic.js'

export type TestChain = {
  anvil: Anvil
  rpcUrl: string
  chainId: number
  /** Public, wallet and anvil test actions in one viem client. */
  client: DevnetClient
  publicClient: DevnetClient
  walletClient: DevnetClient
  contracts: DevnetContracts
  wallets: DevnetWallets
  traffic: TrafficGenerator
  /** For the indexer: from block 0, no confirmations, quick polling, the canonical EntryPoints. */
  config: ChainConfig
  /** `evm_snapshot`: an id to `revert` to. */
  snapshot(): Promise<Hex>
  /** `evm_revert`, then re-reads nonces so traffic can continue on the reverted chain. Mine afterwards to make a reorg. */
  revert(id: Hex): Promise<void>
  /** `anvil_mine`: `blocks` empty blocks (or with whatever is pending when automine is off). */
  mine(blocks?: number): Promise<void>
  stop(): Promise<void>
}

/**
 * anvil on a free port with EntryPoint 0.6/0.7/0.8 at their canonical
 * addresses, a SimpleAccountFactory each and funded smart accounts. Automine
 * stays on: every transaction sent outside `sendMixedTraffic` gets its block.
 */
export async function startTestChain(options: { chainId?: number; seed?: number } = {}): Promise<TestChain> {
  const anvil = await startAnvil({ port: 0, chainId: options.chainId })
  try {
    const client = createDevnetClient({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId })
    const wallets = await createDevnetWallets(client)
    const contracts = await deployContracts({ client, deployer: wallets.deployer })
    const traffic = await createTrafficGenerator({ client, chainId: anvil.chainId, contracts, wallets, seed: options.seed })
    return {
      anvil,
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      client,
      publicClient: client,
      walletClient: client,
      contracts,
      wallets,
      traffic,
      config: {
        chainId: anvil.chainId,
        rpcUrl: anvil.rpcUrl,
        wsUrl: undefined,
        startBlock: 0,
        confirmations: 0,
        finalityDepth: 64,
        pollIntervalMs: 100,
        entryPoints: entryPointVersions.map((version) => contracts.entryPoints[version].address),
      },
      snapshot: () => client.snapshot(),
      async revert(id) {
        await client.revert({ id })
        await traffic.resync()
      },
      mine: (blocks = 1) => client.mine({ blocks }),
      stop: () => anvil.stop(),
    }
  } catch (error) {
    await anvil.stop()
    throw error
  }
}

/**
 * Sends the default traffic mix (plain, schema 0/1/2, multi-code, invalid and
 * registered codes, malformed, reverted, UserOperation bundles on every
 * EntryPoint) and returns the ground truth of what it mined.
 */
export function sendMixedTraffic(
  chain: TestChain,
  options: { transactions?: number; blocks?: number; registeredCodes?: string[] } = {},
): Promise<GroundTruth> {
  return chain.traffic.run({ transactions: options.transactions ?? 200, blocks: options.blocks ?? 50, registeredCodes: options.registeredCodes })
}

/** `evm_snapshot` on the test chain: an id for `revert`. */
export function snapshot(chain: TestChain): Promise<Hex> {
  return chain.snapshot()
}

/** `evm_revert` to a snapshot; the traffic generator re-reads its nonces. Mine afterwards to build the competing branch. */
export function revert(chain: TestChain, id: Hex): Promise<void> {
  return chain.revert(id)
}

/** `anvil_mine` of `blocks` blocks. */
export function mine(chain: TestChain, blocks = 1): Promise<void> {
  return chain.mine(blocks)
}
