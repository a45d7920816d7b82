import { setTimeout as sleep } from 'node:timers/promises'
import type { BatchSizer } from './adaptive-batch.js'
import type { Answered, FailedCalls, ReadResult } from './answers.js'
import { mayBeLength, RpcFailure, shrinks, type FailureKind } from './failure-kinds.js'

/**
 * The calls of one method through a transport: in batches of the size the
 * sizer gives when each goes out, the failed calls alone asked again. A
 * limit met by a batch asks the calls again smaller (no attempt counted); a
 * whole batch that breaks without naming a limit is split after one call
 * alone shows the node is up (batch-caps.ts learns how long a batch may
 * be); a transient fault counts an attempt of each failed call and waits
 * the backoff or the node's Retry-After. Past its attempts a call's error
 * goes up to the caller (the range job: there is no other retry loop below it).
 */

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

/** What the calls need of their transport. */
export type CallManyDeps = {
  sizer: BatchSizer
  maxAttempts: number
  /** The wait before an attempt after `doublings` failed ones, when the node names none. */
  backoffMs: (doublings: number) => number
  /** One request for the calls at `positions`, once a slot is free. */
  send: <T>(spec: CallSpec<T>, positions: readonly number[]) => Promise<Answered<T>>
  /** One request once a slot is free, for the calls `take` gives then (none: no request). */
  sendWhenFree: <T>(spec: CallSpec<T>, take: () => readonly number[] | undefined) => Promise<{ positions: readonly number[]; answered: Answered<T> } | undefined>
  observer: {
    batchSize?(method: string, size: number): void
    split?(call: string, size: number, kind: FailureKind): void
  }
  /** Waits `ms` (the backoff between attempts); a test may give its own. */
  wait?: (ms: number) => Promise<unknown>
}

export function createCallMany({ sizer, maxAttempts, backoffMs, send, sendWhenFree, observer, wait = sleep }: CallManyDeps) {
  /** Per size key, the one-call request under way whose answer will tell the size of a call. */
  const probes = new Map<string, Promise<void>>()

  /** Results of `spec.params.length` calls of one method, in order. */
  return async function callMany<T>(spec: CallSpec<T>): Promise<T[]> {
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
        const batch = queue.length > 0 ? queue.splice(0, lengthOfNext(queue.length)) : undefined
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
     * Blocks are cut at the searched size (the operating point measures
     * them so). Other calls are cut evenly: 200 receipts at a length of 30
     * go as seven of 28–29, not six of 30 and one of 20, so every batch
     * measures the length the node is asked at.
     */
    function lengthOfNext(left: number): number {
      const most = sizer.sizeFor(key)
      return spec.paced ? most : Math.ceil(left / Math.ceil(left / most))
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
        throw failure.retold(`${spec.method}: ${failure.message} (one call alone; not asked again)`)
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
      if (worst >= maxAttempts) {
        // the check's own error (BlockNotFoundError…) tells the range job how soon to try again
        throw failure.checkFailed ?? failure.retold(`${spec.method}: ${failure.message} (after ${worst} attempts)`)
      }
      await wait(failure.retryAfterMs ?? backoffMs(worst - 1))
    }

    if (!spec.paced) sizer.asked(key, spec.params.length)
    await run(spec.params.map((_, position) => position))
    return results
  }
}

/** Two halves (the first the shorter), none empty. */
function halves(positions: readonly number[]): number[][] {
  const middle = Math.floor(positions.length / 2)
  return [positions.slice(0, middle), positions.slice(middle)].filter((half) => half.length > 0)
}
