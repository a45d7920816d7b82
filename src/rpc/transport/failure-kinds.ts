import type { HttpAnswer } from '../wire/http-post.js'

/**
 * What went wrong with a request to the node, as the transport reacts to it
 * (and as the `indexer_rpc_failures_total` counter labels it):
 *
 * - batch_limit: the node refuses batches this long (or any batch) — shrink the batch;
 * - response_too_large: the answer passed the node's size limit (geth -32003, HTTP 413) or our own
 *   (RPC_MAX_ANSWER_BYTES: answer-buffers.ts) — smaller batches by bytes;
 * - rate_limited: HTTP 429 or a rate-limit error — fewer requests in flight, wait Retry-After;
 * - timeout: no answer within the timeout — smaller batches, fewer in flight;
 * - http_error, network, unreadable: of a batch, maybe its length (a proxy that drops long
 *   batches, cuts their answers or answers an error page): one call alone tells, then the rest is
 *   asked in halves; of a single call, a transient fault — retried after a backoff;
 * - unsupported_framing: the answer is framed in a way the socket reader does not read (a transfer
 *   coding other than plain chunked, refused at its head) — retried after a backoff, like any call
 *   that failed; RPC_HTTP_CLIENT=undici reads such a node;
 * - item_error: one call's error — retried after a backoff.
 */
export type FailureKind =
  | 'batch_limit'
  | 'response_too_large'
  | 'rate_limited'
  | 'timeout'
  | 'http_error'
  | 'network'
  | 'unreadable'
  | 'unsupported_framing'
  | 'item_error'

export type RpcErrorObject = { code?: number; message?: string }

/** A failed request or call, with what the node said (kept for logs and `ranges.last_error`). */
export class RpcFailure extends Error {
  override name = 'RpcFailure'
  /** For response_too_large: the size of the answer whose first calls did fit. */
  answeredBytes?: number
  /** For item_error: the error of a result that failed its check (a block the node has not got yet). */
  checkFailed?: Error
  /** The HTTP status of a non-2xx answer. */
  httpStatus?: number
  /** The code of a JSON-RPC error object the node answered. */
  code?: number
  constructor(
    readonly kind: FailureKind,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message)
  }

  /** The same failure told with another message (what the call was, how many attempts): what the node said is kept. */
  retold(message: string): RpcFailure {
    const failure = new RpcFailure(this.kind, message, this.retryAfterMs)
    if (this.httpStatus !== undefined) failure.httpStatus = this.httpStatus
    if (this.code !== undefined) failure.code = this.code
    return failure
  }
}

const mentionsBatch = (message: string) => /batch/i.test(message)

/** The number in "batch limit 10 exceeded", "Number of requests in batch exceeds limit of 50", "max 100 calls"… */
export function limitIn(message: string): number | undefined {
  const match = /(?:limit(?: of)?|max(?:imum)?(?: of)?|exceeds(?: limit(?: of)?)?|at most|up to)\s*:?\s*(\d+)/i.exec(message)
  const limit = match ? Number(match[1]) : Number.NaN
  return Number.isInteger(limit) && limit > 0 ? limit : undefined
}

/** A JSON-RPC error object, as the failure it stands for. */
export function classifyError(error: RpcErrorObject, wholeBatch: boolean): FailureKind {
  const message = String(error.message ?? '')
  if (error.code === -32003 || /response (is )?too large|response size/i.test(message)) return 'response_too_large'
  if (error.code === 429 || /rate.?limit|too many requests|exceeded .*(capacity|quota)/i.test(message)) return 'rate_limited'
  if (mentionsBatch(message) && (error.code === undefined || [-32600, -32602, -32000, -32005, -32010].includes(error.code))) return 'batch_limit'
  // a lone error object answering a batch (id null): the batch as such was refused
  if (wholeBatch) return 'batch_limit'
  return 'item_error'
}

/** A non-2xx HTTP answer, as the failure it stands for. */
export function classifyHttp(answer: HttpAnswer, batchLength: number): RpcFailure {
  const failure = httpFailure(answer, batchLength)
  failure.httpStatus = answer.status
  return failure
}

function httpFailure(answer: HttpAnswer, batchLength: number): RpcFailure {
  const said = answer.text.slice(0, 200).replace(/\s+/g, ' ')
  const describe = `HTTP ${answer.status}${said ? `: ${said}` : ''}`
  if (answer.status === 429) return new RpcFailure('rate_limited', describe, answer.retryAfterMs)
  if (answer.status === 413 && batchLength > 1) return new RpcFailure('batch_limit', describe)
  if (answer.status === 413) return new RpcFailure('response_too_large', describe)
  if (answer.status === 400 && batchLength > 1 && mentionsBatch(answer.text)) return new RpcFailure('batch_limit', describe)
  return new RpcFailure('http_error', describe, answer.retryAfterMs)
}

/** Kinds that mean "ask for less at once": re-asking smaller is not an attempt of the calls. */
export function shrinks(kind: FailureKind): boolean {
  return kind === 'batch_limit' || kind === 'response_too_large' || kind === 'timeout'
}

/**
 * Kinds a whole batch can meet because of its length without the node
 * saying so: asked again in halves, never as it was, once a single call
 * shows the node is up.
 */
export function mayBeLength(kind: FailureKind): boolean {
  return kind === 'network' || kind === 'unreadable' || kind === 'http_error'
}
