import type { Address } from 'viem'
import type { ChainConfig } from '../src/config/chains.js'
import type { Logger } from '../src/logger.js'
import { startAnvil, type Anvil } from './anvil.js'
import { createDevnetClient, type DevnetClient } from './client.js'
import { deployContracts, type DevnetContracts } from './contracts.js'
import { entryPointVersions } from './entry-points.js'
import type { GroundTruth } from './ledger.js'
import { createDevnetWallets } from './send.js'
import { createTrafficGenerator, type TrafficGenerator } from './traffic.js'

export type DevnetOptions = {
  logger: Logger
  /** 0 picks a free port. */
  port?: number
  blockTimeSeconds?: number
  transactionsPerBlock?: number
  /** Confirmations the indexer should wait for on this chain (0 to 2 make sense on a devnet). */
  confirmations?: number
  registeredCodes?: string[]
  seed?: number
  /** How long stop() lets the batch in flight be mined and recorded (default 5 s; 0 abandons it). */
  stopGraceMs?: number
}

export type Devnet = {
  /** Ready for the indexer: chain id, RPC URL, start block 0, the canonical EntryPoints. */
  chain: ChainConfig
  anvil: Anvil
  client: DevnetClient
  contracts: DevnetContracts
  traffic: TrafficGenerator
  /** Wallets sending the traffic: registering them makes the `bc_` codes of the traffic resolve. */
  trafficWallets: Address[]
  /** What the generated traffic has mined so far. */
  truth(): GroundTruth
  /** Stops the traffic (letting its last batch be mined and recorded), then anvil. */
  stop(): Promise<void>
}

/**
 * A local chain with ERC-8021 traffic for running the service with no
 * configuration: anvil, EntryPoint 0.6/0.7/0.8 at their canonical addresses,
 * and a generator sending a mix of attributed, unattributed, malformed and
 * reverted transactions and UserOperations every block.
 */
export async function startDevnet(options: DevnetOptions): Promise<Devnet> {
  const { logger } = options
  const blockTime = options.blockTimeSeconds ?? 2
  logger.warn(
    { port: options.port ?? 8545, block_time_s: blockTime },
    'no RPC_URL configured: starting a local anvil devnet with generated ERC-8021 traffic (set RPC_URL or CHAINS to index a real chain)',
  )
  // deploy under automine (no waiting for block intervals), then switch to interval mining
  const anvil = await startAnvil({ port: options.port ?? 8545 })
  try {
    const client = createDevnetClient({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId })
    const wallets = await createDevnetWallets(client)
    const contracts = await deployContracts({ client, deployer: wallets.deployer })
    const traffic = await createTrafficGenerator({
      client,
      chainId: anvil.chainId,
      contracts,
      wallets,
      registeredCodes: options.registeredCodes,
      seed: options.seed,
    })
    await client.setAutomine(false)
    await client.setIntervalMining({ interval: blockTime })
    logger.info(
      {
        chain_id: anvil.chainId,
        rpc_url: anvil.rpcUrl,
        entry_points: Object.fromEntries(entryPointVersions.map((version) => [version, contracts.entryPoints[version].address])),
        factories: Object.fromEntries(entryPointVersions.map((version) => [version, contracts.entryPoints[version].factory])),
        registered_codes_wallets: wallets.traffic.map((sender) => sender.address),
        registered_codes: traffic.registeredCodes,
      },
      'devnet ready: EntryPoints at their canonical addresses; the bc_ codes of the listed wallets resolve once the wallets are registered (attribution start registers them)',
    )
    const loop = traffic.startLoop({ logger, transactionsPerBlock: options.transactionsPerBlock ?? 4, stopGraceMs: options.stopGraceMs })
    const chain: ChainConfig = {
      chainId: anvil.chainId,
      rpcUrl: anvil.rpcUrl,
      wsUrl: undefined,
      startBlock: 0,
      confirmations: options.confirmations ?? 1,
      // unused: the devnet is indexed by the tip path alone (bin/indexer.ts)
      finalityDepth: 64,
      pollIntervalMs: Math.max(250, Math.min(1_000, (blockTime * 1_000) / 2)),
      entryPoints: entryPointVersions.map((version) => contracts.entryPoints[version].address),
      devnet: true,
    }
    let stopping: Promise<void> | undefined
    return {
      chain,
      anvil,
      client,
      contracts,
      traffic,
      trafficWallets: wallets.traffic.map((sender) => sender.address),
      truth: () => traffic.truth(),
      stop() {
        stopping ??= (async () => {
          await loop.stop()
          await anvil.stop()
          logger.info({ chain_id: anvil.chainId }, 'devnet stopped')
        })()
        return stopping
      },
    }
  } catch (error) {
    await anvil.stop()
    throw error
  }
}

export { startAnvil, type Anvil, type AnvilOptions } from './anvil.js'
export { createDevnetClient, type DevnetClient } from './client.js'
export { deployContracts, type DevnetContracts } from './contracts.js'
export { entryPointVersions, type EntryPointVersion } from './entry-points.js'
export { totalsByCode, type CodeTotals, type ExpectedAttribution, type GroundTruth } from './ledger.js'
export { createTrafficGenerator, defaultTrafficMix, type TrafficGenerator, type TrafficKind } from './traffic.js'
