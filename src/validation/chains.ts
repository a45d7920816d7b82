import type { Address, Hex } from 'viem'
import { USER_OPERATION_EVENT_TOPIC } from '../attribution/userops.js'
import { createRpc, type Rpc } from '../rpc/client.js'
import type { Endpoint } from '../rpc/endpoints/endpoint-pool.js'
import type { LogFilter, RawReceipt } from '../rpc/objects.js'
import { slimReceipt } from '../rpc/scan/receipt-read.js'
import { reducedReceipt } from '../rpc/scan/receipts-scan.js'
import type { HttpClientKind } from '../rpc/wire/http-post.js'
import { ChainSelectionError, toRpcFailure, worthAnotherEndpoint } from './errors.js'

/**
 * What validation needs to know of a chain. `chainId` may be unknown until
 * the node is asked. `rpcUrls`, when given, are all the chain's endpoints
 * (`rpcUrl` is the first), as config/chains.ts writes them.
 */
export type ChainEndpoint = {
  chainId: number | undefined
  rpcUrl: string
  rpcUrls?: readonly string[] | undefined
  entryPoints: readonly Address[]
  explorerUrl?: string | undefined
}

export type ValidationChain = {
  chainId: number
  /** One JSON-RPC call to the chain (see `askChain`): its result as the node gave it. */
  request<T>(method: string, params?: unknown[]): Promise<T>
  /** A mined transaction's receipt reduced to its fields and the EntryPoints' events; null when the node has none. */
  receipt(hash: Hex): Promise<RawReceipt | null>
  entryPoints: readonly Address[]
  /** Largest eth_getLogs range this node accepted so far; shrinks when it refuses one. */
  logRange: number
}

export type ChainOptions = {
  timeoutMs: number
  initialLogRange?: number
  /** Most bytes one answer may have (RPC_MAX_ANSWER_BYTES, default 256 MiB): past it the call fails as the node's (502). */
  maxAnswerBytes?: number
  /** The HTTP client of http URLs (RPC_HTTP_CLIENT), as the indexer's. */
  httpClient?: HttpClientKind
}

type Slot = { endpoint: ChainEndpoint; rpc: Rpc; chain?: ValidationChain; resolving?: Promise<ValidationChain> }

/** Most providers accept 10k-block log queries; smaller limits are learned on the first refusal. */
const DEFAULT_LOG_RANGE = 10_000
/** Requests in flight per endpoint: validation asks single calls, a few lookups at a time (VALIDATE_RPC_CONCURRENCY). */
const IN_FLIGHT = 4
const MOST_IN_FLIGHT = 8

/** Every endpoint of a chain, in the order configured, each once. */
export function urlsOf(endpoint: Pick<ChainEndpoint, 'rpcUrl' | 'rpcUrls'>): string[] {
  return [...new Set(endpoint.rpcUrls?.length ? endpoint.rpcUrls : [endpoint.rpcUrl])]
}

/**
 * The chain's endpoints as the indexer reaches them (rpc/client.ts: one
 * transport per endpoint, the pool's health and failover, URLs redacted in
 * every state and label), with one attempt per call: a failed call is
 * answered 502/504 and the client may ask again within its budget; a retry
 * would double what one lookup may cost a node.
 */
function rpcOf(endpoint: ChainEndpoint, options: ChainOptions): Rpc {
  return createRpc({
    urls: urlsOf(endpoint),
    timeoutMs: options.timeoutMs,
    batchSize: 1,
    ...(options.maxAnswerBytes !== undefined && { answerBytes: options.maxAnswerBytes, batchBytes: Math.min(10 * 2 ** 20, options.maxAnswerBytes) }),
    concurrency: IN_FLIGHT,
    maxConcurrency: MOST_IN_FLIGHT,
    maxAttempts: 1,
    ...(options.httpClient && { httpClient: options.httpClient }),
  })
}

/**
 * One piece of work on the chain's endpoints, moving on to the next only
 * when one is down, hung, failing (5xx) or out of quota (429) —
 * worthAnotherEndpoint — and each endpoint tried once. The endpoint that
 * failed so is sick for the pool (rpc/endpoints/endpoint-health.ts): the
 * next lookups go around it until its probe answers, so a hung endpoint
 * costs one lookup one timeout, not every lookup. A JSON-RPC refusal of the
 * call itself (a log range too large) is the node's answer: it goes back
 * to the lookup, which handles it, and no other endpoint is asked.
 */
async function askChain<T>(rpc: Rpc, work: (endpoint: Endpoint) => Promise<T>): Promise<T> {
  const outcome = await rpc.pool.run(1, async (endpoint): Promise<{ value: T } | { refused: unknown }> => {
    try {
      return { value: await work(endpoint) }
    } catch (error) {
      if (worthAnotherEndpoint(error)) throw error
      return { refused: error }
    }
  })
  if ('refused' in outcome) throw outcome.refused
  return outcome.value
}

/** The logs validation reads of a receipt: the UserOperationEvents of the chain's EntryPoints (records.ts attributionsOf). */
function entryPointEvents(entryPoints: readonly Address[]): LogFilter {
  return { addresses: new Set(entryPoints.map((address) => address.toLowerCase())), topics: [new Set([USER_OPERATION_EVENT_TOPIC])] }
}

/**
 * A receipt reduced as it is read: any transaction can emit a hundred
 * megabytes of logs, and a parse of them all would take the API's heap
 * several times over for a lookup that reads the status and the
 * EntryPoints' events. The scanner reads the answer's bytes
 * (receipts-scan.ts); an answer it cannot read is parsed and reduced the same.
 */
function receiptOf(rpc: Rpc, hash: Hex, logs: LogFilter): Promise<RawReceipt | null> {
  return askChain(rpc, async (endpoint) => {
    const [receipt] = await endpoint.transport.callMany<RawReceipt | null>({
      method: 'eth_getTransactionReceipt',
      params: [[hash]],
      readBatch: (body) => {
        const reduced = reducedReceipt(body, logs)
        if (!reduced) throw new Error('not scanned: parsed instead')
        return [reduced]
      },
      readResult: (value) => (value ? slimReceipt(value as RawReceipt, logs) : null),
    })
    return receipt ?? null
  })
}

function chainOf(slot: Slot, chainId: number, logRange: number): ValidationChain {
  const logs = entryPointEvents(slot.endpoint.entryPoints)
  return {
    chainId,
    request: <T>(method: string, params: unknown[] = []) => askChain(slot.rpc, (endpoint) => endpoint.transport.call<T>(method, params)),
    receipt: (hash) => receiptOf(slot.rpc, hash, logs),
    entryPoints: slot.endpoint.entryPoints,
    logRange,
  }
}

/**
 * The configured chains, with ids read lazily from the node (`eth_chainId`)
 * for those configured without one. A resolved id is kept for the life of
 * the process; a failed resolution is retried on the next request.
 */
export function createValidationChains(endpoints: readonly ChainEndpoint[], options: ChainOptions) {
  const logRange = options.initialLogRange ?? DEFAULT_LOG_RANGE
  const slots: Slot[] = endpoints.map((endpoint) => {
    const slot: Slot = { endpoint, rpc: rpcOf(endpoint, options) }
    if (endpoint.chainId !== undefined) slot.chain = chainOf(slot, endpoint.chainId, logRange)
    return slot
  })

  function resolve(slot: Slot): Promise<ValidationChain> {
    if (slot.chain) return Promise.resolve(slot.chain)
    slot.resolving ??= askChain(slot.rpc, (endpoint) => endpoint.transport.call<Hex>('eth_chainId')).then(
      (hex) => {
        slot.chain = chainOf(slot, Number.parseInt(hex, 16), logRange)
        slot.resolving = undefined
        return slot.chain
      },
      (error: unknown) => {
        slot.resolving = undefined
        throw toRpcFailure(error, undefined)
      },
    )
    return slot.resolving
  }

  /** Chain ids known without asking any node, for messages. */
  const configuredIds = () => slots.map((slot) => slot.chain?.chainId ?? slot.endpoint.chainId).filter((id) => id !== undefined)

  /**
   * The chain a request is about. Without `chainId` there must be exactly
   * one chain; with it, the id must be one of the configured chains.
   * Throws ChainSelectionError (a 400) or an RPC failure when an id had to
   * be read from a node that did not answer.
   */
  async function select(chainId: number | undefined): Promise<ValidationChain> {
    if (slots.length === 0) throw new ChainSelectionError('no chain is configured on this server')
    if (chainId === undefined) {
      if (slots.length > 1) throw new ChainSelectionError(`is required when ${slots.length} chains are configured (${configuredIds().join(', ')})`)
      return resolve(slots[0]!)
    }
    const direct = slots.find((slot) => (slot.chain?.chainId ?? slot.endpoint.chainId) === chainId)
    if (direct) return resolve(direct)
    const unresolved = slots.filter((slot) => !slot.chain && slot.endpoint.chainId === undefined)
    const outcomes = await Promise.allSettled(unresolved.map(resolve))
    const match = outcomes.find((outcome) => outcome.status === 'fulfilled' && outcome.value.chainId === chainId)
    if (match?.status === 'fulfilled') return match.value
    const failure = outcomes.find((outcome) => outcome.status === 'rejected')
    // a node that did not say its id might be the one asked for: that is an outage, not bad input
    if (failure?.status === 'rejected') throw failure.reason
    throw new ChainSelectionError(`${chainId} is not a configured chain (configured: ${configuredIds().join(', ') || 'none'})`)
  }

  return {
    select,
    count: () => slots.length,
    /** Each chain's endpoints as its pool sees them (URLs redacted). */
    endpointStates: () => slots.map((slot) => slot.rpc.endpointStates()),
  }
}

export type ValidationChains = ReturnType<typeof createValidationChains>
