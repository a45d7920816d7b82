import { setTimeout as sleep } from 'node:timers/promises'
import { createBatchSizer } from './adaptive-batch.js'
import { AnswerTooLargeError, createAnswerBuffers } from '../wire/answer-buffers.js'
import { createRateLimitSpell } from './rate-limit-spell.js'
import { createConcurrencyLimiter } from './concurrency.js'
import { allFailed, readItems, requestBody, type Answered, type FailedCalls, type ReadResult } from './answers.js'
import { classifyHttp, limitIn, mayBeLength, RpcFailure, shrinks, type FailureKind } from './failure-kinds.js'
import { createOperatingPointSearch, type OperatingPoint, type Throughput } from './operating-point.js'
import { postJson, RpcNetworkError, RpcTimeoutError, type HttpAnswer } from '../wire/http-post.js'

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
 */
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
  observer?: TransportObserver
}

export type TransportObserver = {
  /** One line when a node limit is learned. */
  limitLearned?(message: string, details: Record<string, number>): void
  batchSize?(method: string, size: number): void
  inFlight?(inFlight: number, limit: number): void
  failure?(kind: FailureKind): void
  /** A batch of `size` calls broke (`kind`) while a single call went through: it is asked again in halves. */
  split?(call: string, size: number, kind: FailureKind): void
  /** The operating point, each time the search moves it. */
  operatingPoint?(report: OperatingPointReport): void
  /** Every HTTP status answered (the metrics count non-2xx). */
  response?(status: number): void
}

/** The operating point and the throughput measured there (the /metrics gauges, the log line). */
export type OperatingPointReport = OperatingPoint & Throughput & { settled: boolean; mostBatch: number; mostInFlight: number }

/** Quiet time after a 429 before one more request in flight may be tried… */
const RATE_LIMIT_QUIET_MS = 30_000
/** …doubled after each raise the node refused, up to this (rate-limit-spell.ts). */
const RATE_LIMIT_LONGEST_QUIET_MS = 8 * RATE_LIMIT_QUIET_MS

export type CallSpec<T> = {
  method: string
  /** What the byte estimate is kept per (default: the method); full blocks and headers differ a thousandfold. */
  sizeKey?: string
  params: readonly unknown[][]
  /**
   * The fast path: the whole answer of the calls at `positions` (in that
   * order), read from its bytes without a full parse. Throw to fall back to
   * parsing it and reading each result with `readResult`.
   */
  readBatch?: (body: Buffer, positions: readonly number[]) => T[]
  /**
   * The calls whose answers measure the operating point (full blocks: the
   * bulk of the bytes and of a node's work); the others are sent at the
   * same point. Without paced calls the point stays where it starts.
   */
  paced?: boolean
  /** One call's result (null when the node has none); throws an error that no retry fixes. */
  readResult: ReadResult<T>
}

export function createTransport(options: TransportOptions) {
  const observer = options.observer ?? {}
  const retryDelayMs = options.retryDelayMs ?? 250
  /** The wait before an attempt after `doublings` failed ones, when the node names none. */
  const backoffMs = (doublings: number) => Math.min(10_000, retryDelayMs * 2 ** doublings)
  // this transport's own answer buffers: as many kept as it may have requests in flight
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
  /** When the cap a 429 set on the requests in flight may be raised by one. */
  const rateLimitSpell = createRateLimitSpell({ quietMs: RATE_LIMIT_QUIET_MS, longestMs: RATE_LIMIT_LONGEST_QUIET_MS })

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

  /**
   * The search measures the paced calls (full blocks) alone, on a clock that
   * runs only while one of them is waited for: in line for a slot or out.
   * A backfill asks in bursts (a range's blocks, then its receipts and
   * commit): time with no block asked says nothing of the node, and a window
   * of receipts answers (a few kilobytes for a round trip each) read as a
   * node twenty times slower. Time in line counts: with fewer requests in
   * flight a block waits longer for its slot, and a clock that ran only
   * while one was out would read that point as no slower.
   */
  const paced = { waited: 0, since: 0, ms: 0 }
  const pacedClock = () => paced.ms + (paced.waited > 0 ? performance.now() - paced.since : 0)
  async function whilePacedWaited<R>(request: () => Promise<R>): Promise<R> {
    if (paced.waited++ === 0) paced.since = performance.now()
    try {
      return await request()
    } finally {
      if (--paced.waited === 0) paced.ms += performance.now() - paced.since
    }
  }

  /** Paced requests out, per the point (`epoch`) they were sent under: a window opens once none of an earlier point is. */
  const pacedOut = new Map<number, number>()
  const earlierOut = (epoch: number) => {
    let out = 0
    for (const [sentEpoch, count] of pacedOut) if (sentEpoch < epoch) out += count
    return out
  }

  /** A paced answer delivered `calls` calls in `bytes`, to a request sent under `epoch`: the search's measure. */
  function measure(epoch: number, calls: number, bytes: number) {
    const now = pacedClock()
    search.answered(epoch, calls, bytes, now, earlierOut(search.epoch))
    if (search.tick(now)) follow()
  }

  /** `request`, counted out under `epoch` while it is (paced calls only). */
  async function countedOut<R>(paced: boolean | undefined, epoch: number, request: () => Promise<R>): Promise<R> {
    if (!paced) return request()
    pacedOut.set(epoch, (pacedOut.get(epoch) ?? 0) + 1)
    try {
      return await request()
    } finally {
      const left = pacedOut.get(epoch)! - 1
      if (left === 0) pacedOut.delete(epoch)
      else pacedOut.set(epoch, left)
    }
  }

  /** After a quiet spell since the last 429, one more request in flight may be tried. */
  function liftRateLimitCap() {
    if (search.caps.inFlight < options.maxConcurrency && rateLimitSpell.mayRaise(performance.now())) {
      search.raiseInFlightCap(search.caps.inFlight + 1)
      shareBytesOfCappedRequests()
    }
  }

  /**
   * Fewer requests in flight than the most configured, by the node's cap: each
   * batch may carry that much more (adaptive-batch.ts), so the answers in
   * flight carry as many bytes as the most would, never more.
   */
  function shareBytesOfCappedRequests() {
    sizer.setShare(options.maxConcurrency / search.caps.inFlight)
    search.limitBatch(sizer.mostCalls())
  }

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
        const answered = await countedOut(spec.paced, epoch, () => exchange(spec, positions, epoch))
        for (const group of answered.failed) react(group.failure, positions.length, sentAt)
        return { positions, answered }
      })
    return spec.paced ? whilePacedWaited(inLine) : inLine()
  }

  /** The request for the calls at `positions`, sent under the point `epoch`, and its answer read. */
  async function exchange<T>(spec: CallSpec<T>, positions: readonly number[], epoch: number): Promise<Answered<T>> {
    let answer: HttpAnswer
    try {
      answer = await postJson(options.url, requestBody(spec.method, spec.params, positions), options.timeoutMs, buffers)
    } catch (error) {
      if (error instanceof RpcTimeoutError) return allFailed(positions, new RpcFailure('timeout', error.message))
      if (error instanceof RpcNetworkError) return allFailed(positions, new RpcFailure('network', error.message))
      if (error instanceof AnswerTooLargeError) return allFailed(positions, new RpcFailure('response_too_large', error.message))
      throw error
    }
    try {
      const answered = readAnswer(spec, positions, answer)
      if (answered.done.length > 0) {
        refusalsAtCap = 0
        liftRateLimitCap()
        if (spec.paced) measure(epoch, answered.done.length, answer.body.length)
      }
      return answered
    } finally {
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

  /** 429s met at the cap with no answer between: a node that names no Retry-After is left alone twice as long after each. */
  let refusalsAtCap = 0

  /** What the transport learns from a failure of a request of `sent` calls, sent at `sentAt`. */
  function react(failure: RpcFailure, sent: number, sentAt: number) {
    observer.failure?.(failure.kind)
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
      case 'rate_limited': {
        const now = performance.now()
        // more in flight than the node takes: never that many again until a quiet spell
        search.capInFlight(Math.max(1, Math.min(search.point.inFlight, limiter.inFlight + 1) - 1))
        const atTheNewCap = rateLimitSpell.refused(now, sentAt)
        // the requests the node takes go as full as the bytes allow: a round trip each, and no more of them
        shareBytesOfCappedRequests()
        search.batchToMost()
        follow()
        // a refusal met at the cap an earlier one set: the node is over its limit even there, and every request
        // waits out its Retry-After (a node that names none: the retry delay, doubled by each such refusal until
        // an answer comes). A first refusal is one request more than the node takes: the cap now keeps
        // below it, the refused calls alone wait (their attempt's backoff) and the requests it takes go on. A
        // pause of every request there cost the capped remote node a second of each short backfill (BENCHMARKS.md).
        if (atTheNewCap) limiter.rateLimited(failure.retryAfterMs ?? backoffMs(refusalsAtCap++))
        return
      }
      case 'timeout':
        search.halveBatch()
        follow()
        return limiter.timedOut()
    }
  }

  /** Per size key, the one-call request under way whose answer will tell the size of a call. */
  const probes = new Map<string, Promise<void>>()

  /** Results of `spec.params.length` calls of one method, in order. */
  async function callMany<T>(spec: CallSpec<T>): Promise<T[]> {
    const key = spec.sizeKey ?? spec.method
    const results = new Array<T>(spec.params.length)
    const attempts = new Array<number>(spec.params.length).fill(0)

    const keep = (answered: Answered<T>) => {
      for (const [position, result] of answered.done) results[position] = result
    }

    /**
     * Asks for the calls at `positions` in batches, each of the size the
     * sizer gives when its request goes out. The queue holds a place in the
     * line of requests for every batch it makes at the size wanted now; a
     * place whose turn comes after the size grew finds nothing left and
     * passes, and more places are taken when it shrank.
     */
    async function run(positions: readonly number[]): Promise<void> {
      const queue = [...(await sizedFirst(positions))]
      observer.batchSize?.(key, sizer.sizeFor(key))
      const turns: Promise<void>[] = []
      let placed = 0
      const takeBatch = () => {
        placed--
        const batch = queue.length > 0 ? queue.splice(0, sizer.sizeFor(key)) : undefined
        holdPlaces()
        return batch
      }
      const holdPlaces = () => {
        for (const wanted = Math.ceil(queue.length / sizer.sizeFor(key)); placed < wanted; placed++) {
          const next = turn()
          // handled here too: once one turn fails for good, the rest run on unawaited
          next.catch(() => {})
          turns.push(next)
        }
      }
      async function turn(): Promise<void> {
        const sent = await sendWhenFree(spec, takeBatch)
        if (sent) await settle(sent.positions, sent.answered)
      }
      holdPlaces()
      // turns are added while earlier ones run
      for (let i = 0; i < turns.length; i++) await turns[i]
    }

    /**
     * Nothing tells yet how large an answer of this method is: one call goes
     * first and sizes the rest by bytes (fifty 1 MB blocks would otherwise be
     * asked in one batch, before any answer said they are large). Returns the
     * positions still to ask; if that call fails for good, nothing more is asked.
     */
    async function sizedFirst(positions: readonly number[]): Promise<readonly number[]> {
      let rest = positions
      while (rest.length > 1 && !sizer.knowsBytes(key)) {
        const probe = probes.get(key)
        if (probe) {
          await probe.catch(() => {})
          continue
        }
        const first = runChunk(rest.slice(0, 1)).finally(() => probes.delete(key))
        probes.set(key, first)
        await first
        rest = rest.slice(1)
      }
      return rest
    }

    async function runChunk(chunk: readonly number[]): Promise<void> {
      await settle(chunk, await send(spec, chunk))
    }

    /** The results of a request for `chunk` kept, its failures recovered from. */
    async function settle(chunk: readonly number[], answered: Answered<T>): Promise<void> {
      keep(answered)
      await Promise.all(answered.failed.map((group) => recover(group, chunk)))
    }

    /** What follows a failure of the calls at `positions`, met in a request for `chunk` (what it taught was learned as it came). */
    async function recover({ positions, failure }: FailedCalls, chunk: readonly number[]): Promise<void> {
      const wholeBatch = chunk.length > 1 && positions.length === chunk.length
      // a node's time per call, not the answer's bytes, can be what a batch is too long for: a light
      // method's batch (sized by bytes) would time out again at its next size, so its length is learned
      if (wholeBatch && failure.kind === 'timeout') sizer.broke(key, chunk.length)
      if (wholeBatch && mayBeLength(failure.kind)) return splitAfter(chunk, failure)
      // one call's own answer too large (a node's size limit, or RPC_MAX_ANSWER_BYTES) is too large again: asked
      // again it would cost the node and this process the same bytes for the same refusal, attempt after attempt
      if (failure.kind === 'response_too_large' && chunk.length === 1) {
        throw new RpcFailure(failure.kind, `${spec.method}: ${failure.message} (one call alone; not asked again)`)
      }
      // a limit met by a batch is not the calls' fault: ask again smaller; a single call that fails counts
      if (!(shrinks(failure.kind) && chunk.length > 1)) await countAttempt(positions, failure)
      await run(positions)
    }

    /**
     * A whole batch broke in a way that may be its length. One call alone
     * tells: if it fails too, the node is down (an attempt of every call,
     * then the batch again after the backoff); if it goes through, the batch
     * was the problem: a cap is learned and the rest is asked in halves.
     */
    async function splitAfter(chunk: readonly number[], failure: RpcFailure): Promise<void> {
      const [first, ...rest] = chunk as [number, ...number[]]
      const alone = await send(spec, [first])
      keep(alone)
      const down = alone.failed.find((group) => group.failure.kind !== 'item_error')
      if (down) {
        await countAttempt(chunk, down.failure)
        return run(chunk)
      }
      sizer.broke(key, chunk.length)
      observer.split?.(key, chunk.length, failure.kind)
      await Promise.all([...alone.failed.map((group) => recover(group, [first])), ...halves(rest).map(runChunk)])
    }

    /** One more attempt of each call at `positions`: throws once one has had them all, else waits the backoff. */
    async function countAttempt(positions: readonly number[], failure: RpcFailure): Promise<void> {
      for (const position of positions) attempts[position]!++
      const worst = Math.max(...positions.map((position) => attempts[position]!))
      if (worst >= options.maxAttempts) {
        // the check's own error (BlockNotFoundError…) tells the range job how soon to try again
        throw failure.checkFailed ?? new RpcFailure(failure.kind, `${spec.method}: ${failure.message} (after ${worst} attempts)`)
      }
      await sleep(failure.retryAfterMs ?? backoffMs(worst - 1))
    }

    await run(spec.params.map((_, position) => position))
    return results
  }

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
  }
}

export type Transport = ReturnType<typeof createTransport>

/** Two halves (the first the shorter), none empty. */
function halves(positions: readonly number[]): number[][] {
  const middle = Math.floor(positions.length / 2)
  return [positions.slice(0, middle), positions.slice(middle)].filter((half) => half.length > 0)
}
