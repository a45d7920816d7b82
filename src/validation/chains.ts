import { createPublicClient, fallback, hexToNumber, http, type Address, type PublicClient } from 'viem'
import { USER_OPERATION_EVENT_TOPIC } from '../attribution/userops.js'
import { AnswerTooLargeError, DEFAULT_MOST_ANSWER_BYTES } from '../rpc/wire/answer-buffers.js'
import type { LogFilter } from '../rpc/objects.js'
import { reducedReceiptAnswer } from '../rpc/scan/receipts-scan.js'
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
  client: PublicClient
  entryPoints: readonly Address[]
  /** Largest eth_getLogs range this node accepted so far; shrinks when it refuses one. */
  logRange: number
}

export type ChainOptions = {
  timeoutMs: number
  initialLogRange?: number
  /** Most bytes one answer may have (RPC_MAX_ANSWER_BYTES, default 256 MiB): past it the call fails as the node's (502). */
  maxAnswerBytes?: number
}

type Slot = { endpoint: ChainEndpoint; client: PublicClient; chain?: ValidationChain; resolving?: Promise<ValidationChain> }

/** Most providers accept 10k-block log queries; smaller limits are learned on the first refusal. */
const DEFAULT_LOG_RANGE = 10_000

/** Every endpoint of a chain, in the order configured, each once. */
export function urlsOf(endpoint: Pick<ChainEndpoint, 'rpcUrl' | 'rpcUrls'>): string[] {
  return [...new Set(endpoint.rpcUrls?.length ? endpoint.rpcUrls : [endpoint.rpcUrl])]
}

/**
 * How a lookup reaches the chain: its endpoints in order, each call moving
 * on to the next only when one is down, failing (5xx) or out of quota (429)
 * — worthAnotherEndpoint. The node budget is spent per lookup before any
 * call (node-lookups.ts), so a call that moves on costs no more of it; each
 * endpoint still gets at most MAX_NODE_CALLS_PER_LOOKUP calls of a lookup.
 * No retries on any endpoint: a failed call is answered 502/504 and the
 * client may ask again within its budget; a retry would double what one
 * lookup may cost a node (viem retries a refused log range, -32005, with
 * backoff).
 */
function transportOf(endpoint: ChainEndpoint, timeoutMs: number, maxAnswerBytes: number) {
  const fetchFn = cappedFetch(maxAnswerBytes, { receiptLogs: entryPointEvents(endpoint.entryPoints) })
  const transports = urlsOf(endpoint).map((url) => http(url, { timeout: timeoutMs, retryCount: 0, fetchFn }))
  if (transports.length === 1) return transports[0]!
  return fallback(transports, { rank: false, retryCount: 0, shouldThrow: (error) => !worthAnotherEndpoint(error) })
}

/** The logs validation reads of a receipt: the UserOperationEvents of the chain's EntryPoints (records.ts attributionsOf). */
function entryPointEvents(entryPoints: readonly Address[]): LogFilter {
  return { addresses: new Set(entryPoints.map((address) => address.toLowerCase())), topics: [new Set([USER_OPERATION_EVENT_TOPIC])] }
}

/** The numeric id of a lone `eth_getTransactionReceipt` request, as viem sends one; undefined for any other request. */
function receiptRequestId(init: RequestInit | undefined): number | undefined {
  // every lookup's calls pass here: most are not receipts, and a substring says so without a parse
  if (typeof init?.body !== 'string' || init.body.length > 1_000 || !init.body.includes('"eth_getTransactionReceipt"')) return undefined
  try {
    const request = JSON.parse(init.body) as { method?: unknown; id?: unknown }
    return request.method === 'eth_getTransactionReceipt' && typeof request.id === 'number' ? request.id : undefined
  } catch {
    return undefined
  }
}

/**
 * fetch, reading the body no further than `mostBytes`: viem reads a whole
 * answer before parsing it, and a node streaming an endless body would
 * grow it until the timeout, in the API process, once per lookup in flight.
 *
 * A receipt is given to viem reduced to its fields and the logs
 * `receiptLogs` names: any transaction can emit a hundred megabytes of logs,
 * and viem's parse of them all would take the API's heap several times
 * over, for a lookup that reads the status and the EntryPoints' events.
 */
export function cappedFetch(mostBytes: number, options: { receiptLogs?: LogFilter } = {}) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init)
    if (Number(response.headers.get('content-length')) > mostBytes) {
      await response.body?.cancel()
      throw new AnswerTooLargeError(mostBytes)
    }
    if (!response.body) return response
    const reader = response.body.getReader()
    const chunks: Uint8Array[] = []
    let length = 0
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      length += read.value.byteLength
      if (length > mostBytes) {
        await reader.cancel()
        throw new AnswerTooLargeError(mostBytes)
      }
      chunks.push(read.value)
    }
    // the body as read (decompressed): its length and encoding headers described the bytes on the wire
    const headers = new Headers(response.headers)
    headers.delete('content-length')
    headers.delete('content-encoding')
    const body = Buffer.concat(chunks, length)
    const { receiptLogs } = options
    const receiptId = receiptLogs ? receiptRequestId(init) : undefined
    const reduced = receiptLogs && receiptId !== undefined ? reducedReceiptAnswer(body, receiptId, receiptLogs) : undefined
    return new Response(reduced ?? body, { status: response.status, statusText: response.statusText, headers })
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
    const client = createPublicClient({ transport: transportOf(endpoint, options.timeoutMs, options.maxAnswerBytes ?? DEFAULT_MOST_ANSWER_BYTES) })
    const slot: Slot = { endpoint, client }
    if (endpoint.chainId !== undefined) slot.chain = { chainId: endpoint.chainId, client, entryPoints: endpoint.entryPoints, logRange }
    return slot
  })

  function resolve(slot: Slot): Promise<ValidationChain> {
    if (slot.chain) return Promise.resolve(slot.chain)
    slot.resolving ??= slot.client.request({ method: 'eth_chainId' }).then(
      (hex) => {
        slot.chain = { chainId: hexToNumber(hex), client: slot.client, entryPoints: slot.endpoint.entryPoints, logRange }
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

  return { select, count: () => slots.length }
}

export type ValidationChains = ReturnType<typeof createValidationChains>
