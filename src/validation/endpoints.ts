import { ConfigError } from '../config/errors.js'
import type { ValidateRpcUrls } from '../config/validate-rpc.js'
import type { ChainEndpoint } from './chains.js'

/**
 * The chains validation asks, with VALIDATE_RPC_URL in place of the
 * indexer's endpoints (all of them) where it names one: a single URL for the one chain, or a
 * URL per chain id (chains whose id is not known until their node is asked
 * keep their own URL). Throws ConfigError (exit 78 at start-up) when a
 * single URL is given for several chains.
 */
export function withValidationRpc(chains: readonly ChainEndpoint[], setting: ValidateRpcUrls | undefined): ChainEndpoint[] {
  if (!setting) return [...chains]
  if (setting.only !== undefined) {
    if (chains.length > 1) throw new ConfigError(`VALIDATE_RPC_URL: one URL was given but ${chains.length} chains are configured; write chainId=url pairs`)
    return chains.map((chain) => askingOnly(chain, setting.only))
  }
  return chains.map((chain) => {
    const own = chain.chainId === undefined ? undefined : setting.byChain.get(chain.chainId)
    return own ? askingOnly(chain, own) : { ...chain }
  })
}

/** The chain asked at `url` alone: the indexer's endpoints are dropped, not tried after it (their quota is the indexer's). */
function askingOnly(chain: ChainEndpoint, url: string): ChainEndpoint {
  const { rpcUrls: _indexers, ...rest } = chain
  return { ...rest, rpcUrl: url }
}
