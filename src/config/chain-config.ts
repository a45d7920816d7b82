/*
 * A chain's settings and the RPC URL rules, without the schema library: `attribution validate`
 * builds its one chain from RPC_URL (or the devnet's) with these alone (validate-command.ts), and
 * chains.ts adds the CHAINS JSON schema on top for everything else.
 */
import type { Address } from 'viem'

/** EntryPoint 0.6, 0.7 and 0.8: the versions whose bundles the indexer decodes. */
export const defaultEntryPoints: readonly Address[] = [
  '0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789',
  '0x0000000071727De22E5E9d8BAf0edAc6f37da032',
  '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108',
]

export type ChainConfig = {
  /** Undefined until read from the node (`eth_chainId`) when not configured. */
  chainId: number | undefined
  /** The first (or only) endpoint. */
  rpcUrl: string
  /** Every endpoint when there are several (RPC_URL as a comma-separated list, CHAINS[].rpcUrls); read through rpcUrlsOf. */
  rpcUrls?: string[] | undefined
  wsUrl: string | undefined
  startBlock: number
  confirmations: number
  /** Blocks behind the head taken as final where the node answers no `finalized` tag (FINALITY_DEPTH). */
  finalityDepth: number
  pollIntervalMs: number
  entryPoints: Address[]
  /** Block explorer base URL (links `<explorerUrl>/tx/<hash>`); known chains have a default. */
  explorerUrl?: string | undefined
  /** The local devnet (a new chain at every start): its previous index is reset, not refused, when the genesis changes. */
  devnet?: boolean
}

export function isRpcUrl(value: string): boolean {
  try {
    return ['http:', 'https:', 'ws:', 'wss:'].includes(new URL(value).protocol)
  } catch {
    return false
  }
}

export const unique = (urls: readonly string[]) => [...new Set(urls)]

/** `rpcUrl` always (the first), `rpcUrls` only when there are several: one endpoint stays configured as before. */
export function endpointsFields(urls: readonly string[]): Pick<ChainConfig, 'rpcUrl' | 'rpcUrls'> {
  return urls.length > 1 ? { rpcUrl: urls[0]!, rpcUrls: [...urls] } : { rpcUrl: urls[0]! }
}

/** Every endpoint of a chain, in the order configured. */
export function rpcUrlsOf(chain: Pick<ChainConfig, 'rpcUrl' | 'rpcUrls'>): string[] {
  return chain.rpcUrls?.length ? chain.rpcUrls : [chain.rpcUrl]
}

/** RPC_URL: one URL, or several separated by commas (the same chain's endpoints). */
export function parseRpcUrlList(value: string): string[] | undefined {
  const urls = value
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '')
  return urls.length > 0 && urls.every(isRpcUrl) ? unique(urls) : undefined
}
