// ox's Address module and the EntryPoint addresses written out, not viem's indexes (hundreds of modules):
// every command reads this configuration, most of them need nothing else of viem
import * as OxAddress from 'ox/Address'
import type { Address } from 'viem'
import { z } from 'zod'
import { ConfigError, issuePath } from './errors.js'

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

const address = z
  .string()
  .refine((value) => OxAddress.validate(value), { error: 'must be a 0x-prefixed 20-byte address' })
  .transform((value) => OxAddress.checksum(value))

const httpUrl = z.string().refine(isRpcUrl, { error: 'must be an http(s) or ws(s) URL' })

const chainEntrySchema = z.object({
  chainId: z.number().int().positive().optional(),
  rpcUrl: httpUrl.optional(),
  rpcUrls: z.array(httpUrl).min(1, 'must list at least one URL').optional(),
  wsUrl: z.string().url().optional(),
  startBlock: z.number().int().min(0).optional(),
  confirmations: z.number().int().min(0).optional(),
  finalityDepth: z.number().int().min(0).optional(),
  pollIntervalMs: z.number().int().positive().optional(),
  entryPoints: z.array(address).optional(),
  explorerUrl: z.string().url().optional(),
})

const chainsSchema = z.array(
  chainEntrySchema
    .refine((entry) => entry.rpcUrl !== undefined || entry.rpcUrls !== undefined, { error: 'rpcUrl or rpcUrls is required', path: ['rpcUrl'] })
    .transform(({ rpcUrl, rpcUrls, ...entry }) => ({ ...entry, ...endpointsFields(unique([...(rpcUrl ? [rpcUrl] : []), ...(rpcUrls ?? [])])) })),
).min(1, 'must list at least one chain')

function isRpcUrl(value: string): boolean {
  try {
    return ['http:', 'https:', 'ws:', 'wss:'].includes(new URL(value).protocol)
  } catch {
    return false
  }
}

const unique = (urls: readonly string[]) => [...new Set(urls)]

/** `rpcUrl` always (the first), `rpcUrls` only when there are several: one endpoint stays configured as before. */
function endpointsFields(urls: readonly string[]): Pick<ChainConfig, 'rpcUrl' | 'rpcUrls'> {
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

function parseChainsValue(raw: string, readFile: (path: string) => string): unknown {
  const text = raw.trim().startsWith('[') ? raw : readFile(raw)
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new ConfigError(`Invalid configuration: CHAINS: not valid JSON (${(error as Error).message})`)
  }
}

/**
 * Chains from `CHAINS` (a JSON array, or the path of a file holding one) or,
 * when it is absent, the single chain of `RPC_URL`/`CHAIN_ID`/`START_BLOCK`/
 * `CONFIRMATIONS`. No RPC at all means no configured chain (the devnet fills in).
 */
/** The variables chains are read from (a part of Env, named here so config/env can import this module and not the reverse). */
export type ChainVariables = {
  CHAINS?: string | undefined
  RPC_URL?: string | undefined
  WS_URL?: string | undefined
  CHAIN_ID?: number | undefined
  START_BLOCK: number
  CONFIRMATIONS: number
  FINALITY_DEPTH: number
  POLL_INTERVAL_MS: number
}

export function chainsFromEnv(env: ChainVariables, readFile: (path: string) => string): ChainConfig[] {
  const defaults = {
    startBlock: env.START_BLOCK,
    confirmations: env.CONFIRMATIONS,
    finalityDepth: env.FINALITY_DEPTH,
    pollIntervalMs: env.POLL_INTERVAL_MS,
    entryPoints: [...defaultEntryPoints],
  }
  if (env.CHAINS) {
    const parsed = chainsSchema.safeParse(parseChainsValue(env.CHAINS, readFile))
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!
      throw new ConfigError(`Invalid configuration: ${issuePath('CHAINS', issue.path)}: ${issue.message}`)
    }
    const chains = parsed.data.map((entry) => ({ ...defaults, wsUrl: undefined, chainId: undefined, ...entry }))
    const ids = chains.map((c) => c.chainId).filter((id) => id !== undefined)
    if (new Set(ids).size !== ids.length) throw new ConfigError('Invalid configuration: CHAINS: a chainId appears twice')
    return chains
  }
  if (!env.RPC_URL) return []
  const urls = parseRpcUrlList(env.RPC_URL)
  if (!urls) throw new ConfigError('Invalid configuration: RPC_URL: must be an http(s) or ws(s) URL, or several separated by commas')
  return [{ ...defaults, chainId: env.CHAIN_ID, ...endpointsFields(urls), wsUrl: env.WS_URL }]
}
