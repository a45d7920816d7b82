import { AnswerTooLargeError, createAnswerBuffers } from '../wire/answer-buffers.js'
import { createBatchSizer } from './adaptive-batch.js'
import { allFailed, readItems, requestBody, type Answered } from './answers.js'
import { createCallMany, type CallSpec } from './call-many.js'
import { createConcurrencyLimiter } from './concurrency.js'
import { createFailureReactions } from './failure-reactions.js'
import { classifyHttp, RpcFailure, type FailureKind } from './failure-kinds.js'
import { createPacedClock } from './paced-clock.js'
import { createOperatingPointSearch, type OperatingPoint, type Throughput } from './operating-point.js'
import { createHttpPoster, RpcNetworkError, RpcTimeoutError, UnreadableFramingError, type HttpAnswer, type HttpClientKind } from '../wire/http-post.js'

/**
 * The one RPC policy of the indexer, per node: every call — blocks,
 * receipts, headers, the head — goes through here. Calls are grouped into
 * JSON-RPC batches sized by adaptive-batch.ts, sent with at most as many in
 * flight as concurrency.ts allows, both at the operating point that
 * operating-point.ts finds by measured throughput. Failures are handled by
 * what they are: a limit makes the batch smaller (the refused calls are
 * asked again, not counted as an attempt); a whole batch that breaks
 * without naming a limit is split after one call alone shows the node is up
 * (batch-caps.ts learns how long a batch may be); a transient fault retries
 * only the calls that failed, after a backoff or the node's Retry-After.
 * Each call has a bounded number of attempts; past it the error goes up to
 * the range job, which records it (there is no other retry loop below the job).
 *
 * Here: the exchange of one request and what its answer teaches. The three
 * jobs around it live beside it: the clock the search measures on
 * (paced-clock.ts), the reactions to each kind of failure
 * (failure-reactions.ts), and the calls' batching, retries and splits
 * (call-many.ts).
 */
export type { CallSpec }

export type TransportOptions = {
  url: string
  timeoutMs: number
  /** Most calls per batch (and the starting size). */
  maxBatchSize: number
  /** Most bytes per batch answer, estimated from earlier answers. */
  maxBatchBytes: number
  /** Most bytes any one answer may have: past it, it is not read further (AnswerTooLargeError). */
  maxAnswerBytes?: number
  /** Requests in flight at the start, and at most. */
  concurrency: number
  maxConcurrency: number
  /** Attempts per call before its error is given up to the caller. */
  maxAttempts: number
  retryDelayMs?: number
  /** The HTTP client of http URLs (RPC_HTTP_CLIENT): the socket reader (default) or undici. */
  httpClient?: HttpClientKind
  observer?: TransportObserver
}

export type TransportObserver = {
  /** One line when a node limit is learned. */
  limitLearned?(message: string, details: Record<string, number>): void
  batchSize?(method: string, size: number): void
  inFlight?(inFlight: number, limit: number): void
  failure?(kind: FailureKind): void
  /** Every request of the node waits `ms` (a 429 met again at the cap an earlier one set). */
  paused?(ms: number): void
  /** A batch of `size` calls broke (`kind`) while a single call went through: it is asked again in halves. */
  split?(call: string, size: number, kind: FailureKind): void
  /** The operating point, each time the search moves it. */
  operatingPoint?(report: OperatingPointReport): void
  /** Every HTTP status answered (the metrics count non-2xx). */
  response?(status: number): void
}

/** The operating point and the throughput measured there (the /metrics gauges, the log line). */
export type OperatingPointReport = OperatingPoint & Throughput & { settled: boolean; mostBatch: number; mostInFlight: number }

export function createTransport(options: TransportOptions) {
  const observer = options.observer ?? {}
  const retryDelayMs = options.retryDelayMs ?? 250
  /** The wait before an attempt after `doublings` failed ones, when the node names none. */
  const backoffMs = (doublings: number) => Math.min(10_000, retryDelayMs * 2 ** doublings)
  // this transport's own answer buffers: as many kept as it may have requests in flight
  // this transport's own connections: at most one per request it may have in flight
  const http = createHttpPoster({ ...(options.httpClient && { client: options.httpClient }), maxConnectionsPerHost: options.maxConcurrency })
  const buffers = createAnswerBuffers({ kept: options.maxConcurrency, ...(options.maxAnswerBytes !== undefined && { mostBytes: options.maxAnswerBytes }) })
  const sizer = createBatchSizer({
    maxSize: options.maxBatchSize,
    maxBytes: options.maxBatchBytes,
    onLimit: (message, details) => observer.limitLearned?.(message, details),
  })
  const search = createOperatingPointSearch({
    start: { batch: options.maxBatchSize, inFlight: options.concurrency },
    maxBatch: options.maxBatchSize,
    maxInFlight: options.maxConcurrency,
  })
  const limiter = createConcurrencyLimiter({
    initial: search.point.inFlight,
    max: options.maxConcurrency,
    onChange: (inFlight, limit) => observer.inFlight?.(inFlight, limit),
  })
  sizer.setSize(search.point.batch)
  const reactions = createFailureReactions({
    sizer,
    search,
    limiter,
    maxConcurrency: options.maxConcurrency,
    follow,
    backoffMs,
    onFailure: (failure) => observer.failure?.(failure.kind),
    onPause: (ms) => observer.paused?.(ms),
  })

  /** The sizer and the limiter take the search's point. */
  function follow() {
    sizer.setSize(search.point.batch)
    limiter.setLimit(search.point.inFlight)
    buffers.keep(search.point.inFlight + 1)
    observer.operatingPoint?.(operatingPoint())
  }

  function operatingPoint(): OperatingPointReport {
    const { point, throughput, settled, caps } = search
    return { ...point, ...throughput, settled, mostBatch: caps.batch, mostInFlight: caps.inFlight }
  }

  const pacing = createPacedClock(search, follow)

  /** A request of `calls` calls of `key` answered whole, in `bytes`: the sizer learns from it. */
  function succeeded(key: string, calls: number, bytes: number) {
    sizer.succeeded(key, calls, bytes)
    search.limitBatch(sizer.mostCalls())
    observer.batchSize?.(key, sizer.sizeFor(key))
  }

  /** One HTTP request for the calls at `positions`: what came back, call by call. */
  async function send<T>(spec: CallSpec<T>, positions: readonly number[]): Promise<Answered<T>> {
    return (await sendWhenFree(spec, () => positions))!.answered
  }

  /**
   * One HTTP request once a slot is free, for the calls `take` gives then
   * (none: no request, and the slot goes to the next in line). The batch is
   * cut and tagged with the point when it goes out, and what its answer
   * teaches (a limit, a 429) is learned before the slot goes to the next
   * batch in line. Cut when they were queued, batches would reach the node
   * at the old size long after a move or a refusal: every batch queued
   * behind a refused one refused too, and the search's window measuring
   * the old point.
   */
  async function sendWhenFree<T>(spec: CallSpec<T>, take: () => readonly number[] | undefined): Promise<{ positions: readonly number[]; answered: Answered<T> } | undefined> {
    const inLine = () =>
      limiter.run(async () => {
        const positions = take()
        if (!positions) return undefined
        const epoch = search.epoch
        const sentAt = performance.now()
        const answered = await pacing.countedOut(spec.paced, epoch, () => exchange(spec, positions, epoch))
        for (const group of answered.failed) reactions.react(group.failure, positions.length, sentAt)
        return { positions, answered }
      })
    return spec.paced ? pacing.whileWaited(inLine) : inLine()
  }

  /** The request for the calls at `positions`, sent under the point `epoch`, and its answer read. */
  async function exchange<T>(spec: CallSpec<T>, positions: readonly number[], epoch: number): Promise<Answered<T>> {
    let answer: HttpAnswer
    const key = spec.sizeKey ?? spec.method
    // the round trip of a method sized by delivery (batch-length.ts): the node's time, not this process's reading
    const tag = spec.paced ? undefined : sizer.sent(key, positions.length, performance.now())
    try {
      answer = await http.post(options.url, requestBody(spec.method, spec.params, positions), options.timeoutMs, buffers)
    } catch (error) {
      sizer.answered(key, tag, undefined, performance.now())
      if (error instanceof RpcTimeoutError) return allFailed(positions, new RpcFailure('timeout', error.message))
      if (error instanceof RpcNetworkError) return allFailed(positions, new RpcFailure('network', error.message))
      if (error instanceof AnswerTooLargeError) return allFailed(positions, new RpcFailure('response_too_large', error.message))
      if (error instanceof UnreadableFramingError) return allFailed(positions, new RpcFailure('unsupported_framing', error.message))
      throw error
    }
    const answeredAt = performance.now()
    let served = 0
    try {
      const answered = readAnswer(spec, positions, answer)
      served = answered.done.length
      if (answered.done.length > 0) {
        reactions.answered()
        if (spec.paced) pacing.measure(epoch, answered.done.length, answer.body.length)
      }
      return answered
    } finally {
      // a refusal or a failure counts no calls but its time: what a length costs includes the retries it needs
      sizer.answered(key, tag, served > 0 ? served : undefined, answeredAt)
      answer.release()
    }
  }

  /** An answer read call by call (or by the fast path), before its buffer goes back. */
  function readAnswer<T>(spec: CallSpec<T>, positions: readonly number[], answer: HttpAnswer): Answered<T> {
    observer.response?.(answer.status)
    if (answer.status < 200 || answer.status >= 300) return allFailed(positions, classifyHttp(answer, positions.length))
    if (spec.readBatch) {
      try {
        const results = spec.readBatch(answer.body, positions)
        succeeded(spec.sizeKey ?? spec.method, positions.length, answer.body.length)
        return { done: results.map((result, i) => [positions[i]!, result]), failed: [] }
      } catch {
        // an error item, a missing result or a layout the fast path does not know: read it call by call
      }
    }
    const answered = readItems(spec.readResult, answer.text, positions)
    if (answered.failed.length === 0) succeeded(spec.sizeKey ?? spec.method, positions.length, answer.body.length)
    // the good part of an answer cut by the size limit is what fits in it, and tells the size of a call
    if (answered.done.length > 0 && answered.failed.length > 0) {
      sizer.measured(spec.sizeKey ?? spec.method, answered.done.length, answer.body.length)
      for (const group of answered.failed) group.failure.answeredBytes = answer.body.length
    }
    return answered
  }

  const callMany = createCallMany({ sizer, maxAttempts: options.maxAttempts, backoffMs, send, sendWhenFree, observer })

  /** One call; its result as the node gave it (null when it has none). */
  async function call<T>(method: string, params: unknown[] = []): Promise<T> {
    const [result] = await callMany({ method, params: [params], readResult: (value) => value as T })
    return result!
  }

  return {
    callMany,
    call,
    batchSize: (method: string) => sizer.current(method),
    /** Where the search drives this node now, and what it delivered over its last window. */
    get operatingPoint() {
      return operatingPoint()
    },
    get inFlight() {
      return limiter.inFlight
    },
    get concurrency() {
      return limiter.limit
    },
    /** The node refused requests past a count (429s), fewer than configured: each request is a slot it has few of. */
    get requestsCapped() {
      return search.caps.inFlight < options.maxConcurrency
    },
    /** Closes this transport's idle connections. */
    close: () => http.close(),
  }
}

export type Transport = ReturnType<typeof createTransport>

