import type { Sql } from '../db/connect.js'
import type { Registry } from '../registry/register.js'
import type { HttpClientKind } from '../rpc/wire/http-post.js'
import type { ChainEndpoint, ChainOptions, ValidationChains } from './chains.js'
import { findIndexed } from './index-lookup.js'
import { createNodeLookups } from './node-lookups.js'
import type { ValidationRequest } from './request.js'
import { describeFinding, type Finding, type ValidationResult } from './result.js'

type IndexQuery = Parameters<typeof findIndexed>[1]

export type ValidatorOptions = {
  /** Read with plain SQL (index-lookup.ts): the API passes its drizzle database, whose driver this is. */
  db: { $client: Sql }
  registry: Pick<Registry, 'findManyByCode'>
  chains: readonly ChainEndpoint[]
  /** Per RPC request (RPC_TIMEOUT_MS). */
  rpcTimeoutMs: number
  /** Most bytes one node answer may have (RPC_MAX_ANSWER_BYTES). */
  rpcMaxAnswerBytes?: number
  /** The HTTP client of http RPC URLs (RPC_HTTP_CLIENT), as the indexer's. */
  rpcHttpClient?: HttpClientKind
  /** Blocks back from the head searched for a UserOperation hash (VALIDATE_LOG_WINDOW). */
  logWindow: number
  /** How long an answer found in the index is reused (0: never). */
  indexCacheMs?: number
  /** How long a hash the node did not know is answered 404 without asking again (VALIDATE_MISS_CACHE_MS; 0: never). */
  missCacheMs?: number
  /** Lookups asking the node at once (VALIDATE_RPC_CONCURRENCY); a few more wait, the rest are refused. */
  nodeConcurrency?: number
  /**
   * Lets a lookup the index cannot answer ask the node, or throws: the
   * caller's budgets per client and for all clients (the API's 429 and 503).
   * Not called for answers from the index, remembered misses, or a lookup
   * already in flight for the same hash.
   */
  admitNodeLookup?: (client: string | undefined) => Promise<void>
  /** Called when a lookup is refused because too many already wait for the node (metrics). */
  onNodeBusy?: () => void
}

/** Who is asking, for the caller's budgets (the API passes the client's key; the CLI nothing). */
export type ValidationContext = { client?: string }

type CachedFinding = { finding: Finding; expiresAt: number }
const MAX_CACHED_FINDINGS = 50_000

/**
 * The chain id a request selects when that needs no node, and the selection cannot fail: one chain
 * configured with its id and none asked for, or the id asked for configured. Otherwise undefined,
 * and chains.ts's select decides (an id read from a node, or a ChainSelectionError), as it would anyway.
 */
export function chainIdKnownWithoutNode(endpoints: readonly ChainEndpoint[], requested: number | undefined): number | undefined {
  if (requested === undefined) return endpoints.length === 1 ? endpoints[0]!.chainId : undefined
  return endpoints.some((endpoint) => endpoint.chainId === requested) ? requested : undefined
}

/**
 * Validation by hash: the index first (cheap, and what analytics counted),
 * the chain otherwise. Throws ChainSelectionError, HashNotFoundError,
 * RpcUnavailableError or RpcTimeoutError; see src/validation/errors.ts.
 */
export function createValidator(options: ValidatorOptions) {
  const chainOptions: ChainOptions = {
    timeoutMs: options.rpcTimeoutMs,
    ...(options.rpcMaxAnswerBytes !== undefined && { maxAnswerBytes: options.rpcMaxAnswerBytes }),
    ...(options.rpcHttpClient && { httpClient: options.rpcHttpClient }),
  }
  // The node's side (RPC clients, receipt scanners, viem's ABI decoding: hundreds of modules) is
  // loaded at the first lookup that needs a node. `attribution validate` of an indexed hash then
  // starts without it (bench/cli.bench.ts); the daemon's indexer has loaded those modules already.
  let chains: Promise<ValidationChains> | undefined
  const nodeChains = () => (chains ??= import('./chains.js').then((module) => module.createValidationChains(options.chains, chainOptions)))
  const findOnChain: (typeof import('./rpc-lookup.js'))['findOnChain'] = async (...args) => (await import('./rpc-lookup.js')).findOnChain(...args)
  const indexCacheMs = options.indexCacheMs ?? 2_000
  // agents and dashboards poll the same hashes; an indexed answer only changes on a reorg
  const recentlyIndexed = new Map<string, CachedFinding>()
  const nodeLookups = createNodeLookups<Finding>({
    concurrency: options.nodeConcurrency ?? 4,
    missCacheMs: options.missCacheMs ?? 0,
    onBusy: options.onNodeBusy,
  })
  const admitNodeLookup = options.admitNodeLookup ?? (async () => {})

  async function findIndexedCached(query: IndexQuery): Promise<Finding | undefined> {
    const key = `${query.type}:${query.chainId}:${query.hash}`
    const now = Date.now()
    const cached = recentlyIndexed.get(key)
    if (cached && cached.expiresAt > now) return cached.finding
    const finding = await findIndexed(options.db.$client, query)
    if (finding && indexCacheMs > 0) {
      if (recentlyIndexed.size >= MAX_CACHED_FINDINGS) recentlyIndexed.clear()
      recentlyIndexed.set(key, { finding, expiresAt: now + indexCacheMs })
    }
    return finding
  }

  async function validate(request: ValidationRequest, context: ValidationContext = {}): Promise<ValidationResult> {
    const knownId = chainIdKnownWithoutNode(options.chains, request.chainId)
    // selected once: by id alone when the configuration settles it, else by chains.ts (which may ask a node)
    const selected = knownId === undefined ? await (await nodeChains()).select(request.chainId) : undefined
    const chainId = selected?.chainId ?? knownId!
    const query = { type: request.type, hash: request.hash, chainId }
    const finding =
      (await findIndexedCached(query)) ??
      (await nodeLookups.run(
        `${query.type}:${query.chainId}:${query.hash}`,
        () => admitNodeLookup(context.client),
        async () => findOnChain(selected ?? (await (await nodeChains()).select(chainId)), { ...query, logWindow: options.logWindow }),
      ))
    return describeFinding(finding, options.registry)
  }

  return { validate }
}

export type Validator = ReturnType<typeof createValidator>
