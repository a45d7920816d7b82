import { BaseError, HttpRequestError, RpcRequestError, TimeoutError } from 'viem'
import { AnswerTooLargeError } from '../rpc/wire/answer-buffers.js'

/** The chain does not know the hash (or the bounded search for it found nothing). */
export class HashNotFoundError extends Error {
  override name = 'HashNotFoundError'
}

/** The request names no usable chain: `chainId` missing among several, or not configured. */
export class ChainSelectionError extends Error {
  override name = 'ChainSelectionError'
  readonly field = 'chainId'
  constructor(readonly reason: string) {
    super(`chainId: ${reason}`)
  }
}

/** The node could not be reached or answered with an error. */
export class RpcUnavailableError extends Error {
  override name = 'RpcUnavailableError'
  constructor(chainId: number | undefined, cause: unknown) {
    super(`RPC of chain ${chainId ?? '(unresolved)'} failed: ${shortMessage(cause)}`, { cause })
  }
}

/** The node did not answer within RPC_TIMEOUT_MS. */
export class RpcTimeoutError extends Error {
  override name = 'RpcTimeoutError'
  constructor(chainId: number | undefined, cause: unknown) {
    super(`RPC of chain ${chainId ?? '(unresolved)'} timed out: ${shortMessage(cause)}`, { cause })
  }
}

/**
 * The node lookups of this process are all taken and too many wait already
 * (VALIDATE_RPC_CONCURRENCY), or every client together used the window's
 * lookups (VALIDATE_RPC_MAX): the node is spared, the client retries later.
 */
export class ValidationBusyError extends Error {
  override name = 'ValidationBusyError'
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message)
  }
}

function shortMessage(error: unknown): string {
  // viem says only "HTTP request failed" of an answer cut off for its size: the cut is what the client needs to know
  const tooLarge = error instanceof BaseError ? error.walk((inner) => inner instanceof AnswerTooLargeError) : undefined
  if (tooLarge instanceof AnswerTooLargeError) return tooLarge.message
  if (error instanceof BaseError) return error.shortMessage
  return error instanceof Error ? error.message.split('\n')[0]! : String(error)
}

function walks(error: unknown, type: abstract new (...args: never[]) => Error): boolean {
  return error instanceof BaseError && error.walk((inner) => inner instanceof type) instanceof type
}

/** True when the node answered with a JSON-RPC error (it is up, but refused this call). */
export function isJsonRpcRefusal(error: unknown): boolean {
  return walks(error, RpcRequestError) && !walks(error, TimeoutError)
}

/** Classifies an error thrown by a viem call as a timeout or an outage. Errors of ours pass through. */
export function toRpcFailure(error: unknown, chainId: number | undefined): Error {
  if (error instanceof HashNotFoundError || error instanceof ChainSelectionError) return error
  if (error instanceof RpcTimeoutError || error instanceof RpcUnavailableError) return error
  if (error instanceof TimeoutError || walks(error, TimeoutError)) return new RpcTimeoutError(chainId, error)
  return new RpcUnavailableError(chainId, error)
}

/**
 * Whether a failed call is worth asking the chain's next endpoint: the node
 * could not be reached, or answered 5xx or 429 (out of order or out of
 * quota, as a node of another provider may not be). A JSON-RPC refusal of
 * this very call (a log range too large, bad params) is not: another node
 * would answer alike, and the lookup handles it. Nor is a timeout: the next
 * endpoint would get a whole RPC_TIMEOUT_MS more, so one lookup could hold
 * a client and a VALIDATE_RPC_CONCURRENCY slot for N timeouts.
 */
export function worthAnotherEndpoint(error: unknown): boolean {
  if (!(error instanceof BaseError) || walks(error, TimeoutError)) return false
  const http = error.walk((inner) => inner instanceof HttpRequestError || inner instanceof RpcRequestError) as HttpRequestError | RpcRequestError | null
  // no HTTP answer at all (refused, reset, DNS): viem's HttpRequestError without a status
  if (http instanceof HttpRequestError && http.status === undefined) return true
  const status = http?.status
  if (status !== undefined) return status === 429 || status >= 500
  // a rate limit some providers send as a JSON-RPC error in a 200 (Alchemy: 429, QuickNode: -32007)
  const code = (error.walk((inner) => typeof (inner as { code?: unknown }).code === 'number') as { code?: number } | null)?.code
  return code === 429 || code === -32007
}
