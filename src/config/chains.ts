// ox's Address module, not viem's indexes (hundreds of modules): every command reads this configuration,
// most of them need nothing else of viem
import * as OxAddress from 'ox/Address'
import { z } from 'zod'
import { defaultEntryPoints, endpointsFields, isRpcUrl, parseRpcUrlList, unique, type ChainConfig } from './chain-config.js'
import { ConfigError, issuePath } from './errors.js'

export { defaultEntryPoints, parseRpcUrlList, rpcUrlsOf, type ChainConfig } from './chain-config.js'

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
