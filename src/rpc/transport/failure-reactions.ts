import type { BatchSizer } from './adaptive-batch.js'
import type { ConcurrencyLimiter } from './concurrency.js'
import { limitIn, type RpcFailure } from './failure-kinds.js'
import type { OperatingPointSearch } from './operating-point.js'
import { createRateLimitSpell } from './rate-limit-spell.js'

/**
 * What a transport learns from a failed request, by what the failure is:
 * a batch limit or an answer too large makes the batch smaller; a 429 caps
 * the requests in flight one below what the node refused (and, met again
 * at that cap, pauses every request for its Retry-After); a timeout halves
 * the batch and the requests in flight. An answer after refusals lets the
 * cap rise again after a quiet spell (rate-limit-spell.ts).
 */

/** Quiet time after a 429 before one more request in flight may be tried… */
const RATE_LIMIT_QUIET_MS = 30_000
/** …doubled after each raise the node refused, up to this (rate-limit-spell.ts). */
const RATE_LIMIT_LONGEST_QUIET_MS = 8 * RATE_LIMIT_QUIET_MS

export type FailureReactionsOptions = {
  sizer: BatchSizer
  search: OperatingPointSearch
  limiter: ConcurrencyLimiter
  maxConcurrency: number
  /** The sizer and the limiter take the search's point (after each move). */
  follow: () => void
  /** The wait before an attempt after `doublings` failed ones, when the node names none. */
  backoffMs: (doublings: number) => number
  onFailure?: (failure: RpcFailure) => void
  /** Every request of the node paused for `ms` (a 429 met at the cap an earlier one set). */
  onPause?: (ms: number) => void
  now?: () => number
}

export function createFailureReactions(options: FailureReactionsOptions) {
  const { sizer, search, limiter, follow } = options
  const now = options.now ?? (() => performance.now())
  /** When the cap a 429 set on the requests in flight may be raised by one. */
  const rateLimitSpell = createRateLimitSpell({ quietMs: RATE_LIMIT_QUIET_MS, longestMs: RATE_LIMIT_LONGEST_QUIET_MS })
  /** 429s met at the cap with no answer between: a node that names no Retry-After is left alone twice as long after each. */
  let refusalsAtCap = 0

  /**
   * Fewer requests in flight than the most configured, by the node's cap: each
   * batch may carry that much more (adaptive-batch.ts), so the answers in
   * flight carry as many bytes as the most would, never more.
   */
  function shareBytesOfCappedRequests() {
    sizer.setShare(options.maxConcurrency / search.caps.inFlight)
    search.limitBatch(sizer.mostCalls())
  }

  function rateLimited(failure: RpcFailure, sentAt: number) {
    // more in flight than the node takes: never that many again until a quiet spell
    search.capInFlight(Math.max(1, Math.min(search.point.inFlight, limiter.inFlight + 1) - 1))
    const atTheNewCap = rateLimitSpell.refused(now(), sentAt)
    // the requests the node takes go as full as the bytes allow: a round trip each, and no more of them
    shareBytesOfCappedRequests()
    search.batchToMost()
    follow()
    // a refusal met at the cap an earlier one set: the node is over its limit even there, and every request
    // waits out its Retry-After (a node that names none: the retry delay, doubled by each such refusal until
    // an answer comes). A first refusal is one request more than the node takes: the cap now keeps
    // below it, the refused calls alone wait (their attempt's backoff) and the requests it takes go on. A
    // pause of every request there cost the capped remote node a second of each short backfill (BENCHMARKS.md).
    if (!atTheNewCap) return
    const pauseMs = failure.retryAfterMs ?? options.backoffMs(refusalsAtCap++)
    limiter.rateLimited(pauseMs)
    options.onPause?.(pauseMs)
  }

  return {
    /** What the transport learns from a failure of a request of `sent` calls, sent at `sentAt`. */
    react(failure: RpcFailure, sent: number, sentAt: number) {
      options.onFailure?.(failure)
      switch (failure.kind) {
        case 'batch_limit':
          sizer.batchRefused(sent, limitIn(failure.message))
          search.limitBatch(sizer.mostCalls())
          return follow()
        case 'response_too_large':
          sizer.responseTooLarge(sent, failure.answeredBytes ?? 0)
          search.limitBatch(sizer.mostCalls())
          search.halveBatch()
          return follow()
        case 'rate_limited':
          return rateLimited(failure, sentAt)
        case 'timeout':
          search.halveBatch()
          follow()
          return limiter.timedOut()
      }
    },

    /** A request was answered (some of its calls at least): after a quiet spell since the last 429, one more request in flight may be tried. */
    answered() {
      refusalsAtCap = 0
      if (search.caps.inFlight < options.maxConcurrency && rateLimitSpell.mayRaise(now())) {
        search.raiseInFlightCap(search.caps.inFlight + 1)
        shareBytesOfCappedRequests()
      }
    },
  }
}
