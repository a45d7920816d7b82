import { createTestClient, defineChain, http, publicActions, walletActions, type Chain } from 'viem'

export function devnetChain(chainId: number, rpcUrl: string): Chain {
  return defineChain({
    id: chainId,
    name: 'Local devnet',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  })
}

/**
 * One client for everything the devnet does to its node: anvil test actions
 * (mine, snapshot, automine), reads and sends. Requests made in the same tick
 * go out as one JSON-RPC batch, which is what makes hundreds of sends cheap.
 */
export function createDevnetClient({ rpcUrl, chainId }: { rpcUrl: string; chainId: number }) {
  return createTestClient({
    mode: 'anvil',
    chain: devnetChain(chainId, rpcUrl),
    transport: http(rpcUrl, { batch: { batchSize: 200 }, retryCount: 2, timeout: 30_000 }),
    pollingInterval: 100,
    // never answer getBlockNumber from viem's cache: tests read the head right after mining
    cacheTime: 0,
  })
    .extend(publicActions)
    .extend(walletActions)
}

export type DevnetClient = ReturnType<typeof createDevnetClient>
