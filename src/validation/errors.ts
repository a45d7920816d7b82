import { redactRpcUrl } from '../rpc/endpoints/endpoint-redact.js'
import { RpcFailure } from '../rpc/transport/failure-kinds.js'

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

/**
 * An error's first line, any URL in it redacted (endpoint-redact.ts): the
 * transport names no URL, but what a socket or undici says is passed on,
 * and an RPC URL's key must not reach a client or a log line.
 */
function shortMessage(error: unknown): string {
  const line = error instanceof Error ? error.message.split('\n')[0]! : String(error)
  return line.replace(/\bhttps?:\/\/[^\s"'<>]+/g, (url) => redactRpcUrl(url))
}

/** True when the node answered this call with a JSON-RPC error (it is up, but refused this call). */
export function isJsonRpcRefusal(error: unknown): boolean {
  return error instanceof RpcFailure && error.code !== undefined && error.kind !== 'timeout'
}

/** Classifies an error of a call to the chain (rpc/'s RpcFailure) as a timeout or an outage. Errors of ours pass through. */
export function toRpcFailure(error: unknown, chainId: number | undefined): Error {
  if (error instanceof HashNotFoundError || error instanceof ChainSelectionError) return error
  if (error instanceof RpcTimeoutError || error instanceof RpcUnavailableError) return error
  if (error instanceof RpcFailure && error.kind === 'timeout') return new RpcTimeoutError(chainId, error)
  return new RpcUnavailableError(chainId, error)
}

/**
 * Whether a failed call is worth asking the chain's next endpoint: the node
 * could not be reached, did not answer in time (hung: the pool then keeps
 * it out of the next lookups), answered 5xx or 429, or an answer that is
 * no JSON-RPC (out of order or out of quota, as a node of another provider
 * may not be). A JSON-RPC refusal of this very call (a log range too large,
 * bad params) is not: another node would answer alike, and the lookup
 * handles it; nor is a 4xx other than 429 (this client refused).
 */
export function worthAnotherEndpoint(error: unknown): boolean {
  if (!(error instanceof RpcFailure)) return false
  switch (error.kind) {
    case 'network':
    case 'timeout':
    case 'rate_limited':
    case 'unreadable':
    case 'unsupported_framing':
      return true
    case 'http_error':
      return error.httpStatus === undefined || error.httpStatus >= 500
    default:
      // a rate limit some providers send as a JSON-RPC error in a 200 (QuickNode: -32007); a JSON-RPC error in a 5xx
      return error.code === -32007 || (error.httpStatus !== undefined && error.httpStatus >= 500)
  }
}
