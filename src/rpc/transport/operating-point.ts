/**
 * Where one node is driven: how many calls go in a batch and how many
 * requests are in flight, chosen by what the node delivers.
 *
 * Nodes differ in what they reward. A node that writes pre-serialized
 * answers serves large batches cheaply; one that runs a batch's calls one
 * after another on one thread serves batches of ten better than fifty; a
 * hosted provider adds 50 ms to every answer and refuses past 8 in flight.
 * No fixed setting, and no rule that grows until pushed back, fits all of
 * them, so this search measures delivered work (bytes per second of the
 * answers the transport paces by: full blocks) over short windows
 * and climbs one coordinate at a time: a neighbouring point is tried for a
 * window and kept only if it delivers more. A point with more load (more in
 * flight) must deliver clearly more to be kept; one with less load is kept
 * if it delivers about as much — load that adds no throughput is taken off.
 * Besides the four single steps, two diagonal ones spread the same calls
 * over more requests or gather them into fewer: a caller that asks a range
 * at a time has only so many requests to send.
 * Each neighbour is judged against the base measured just before and just
 * after it, so a machine that got busier or quieter meanwhile is not read
 * as a better or worse point. Once no neighbour wins, the point is settled
 * and a neighbour is tried again now and then, so a node that gets faster
 * or slower is followed.
 *
 * Pure: time comes in as arguments (the transport's clock runs only while
 * a block is waited for, so a caller that pauses does not read as a slow
 * node); answers are counted only under the point their request was sent
 * with (`epoch`), and a window opens at the first of them once no request
 * sent under an earlier point is still out, so a window measures that point
 * alone. (Opened while earlier requests are still out, a window spends
 * their answers' time without their bytes, and a point of larger batches or
 * more in flight, which leaves more of that time, reads as worse than it is.)
 */
export type OperatingPoint = { batch: number; inFlight: number }

export type OperatingPointOptions = {
  start: OperatingPoint
  maxBatch: number
  maxInFlight: number
  /** Shortest window measured per point. */
  windowMs?: number
  /** Fewest answers a window needs (longer windows on a slow node). */
  minAnswers?: number
  /** A point with more in flight is kept only if it delivers this much more. */
  gainForLoad?: number
  /** A point with fewer in flight is kept if it delivers at least this share of the best rate at the current point. */
  keepShare?: number
  /** A point with as many in flight (another batch size) is kept only if it delivers this much more. */
  sameLoadGain?: number
  /** Windows at a settled point between two tries of a neighbour. */
  settledWindows?: number
}

/** A step from the base: each coordinate down, unchanged or up. */
type Move = { batch: -1 | 0 | 1; inFlight: -1 | 0 | 1 }
const MOVES: readonly Move[] = [
  // the same calls spread over more requests, or gathered into fewer: a caller that asks a range at a
  // time has only so many requests to send, and there neither coordinate alone moves anything. Tried
  // first: it adds no calls in flight, and one request more finds a node's cap on requests (a 429) at once
  { batch: -1, inFlight: 1 },
  { batch: -1, inFlight: 0 },
  { batch: 0, inFlight: -1 },
  { batch: 1, inFlight: 0 },
  { batch: 0, inFlight: 1 },
  { batch: 1, inFlight: -1 },
]

/** What a window delivered, per second. */
export type Throughput = { callsPerSecond: number; bytesPerSecond: number }

export function createOperatingPointSearch(options: OperatingPointOptions) {
  const windowMs = options.windowMs ?? 500
  const minAnswers = options.minAnswers ?? 6
  const gainForLoad = options.gainForLoad ?? 1.05
  const keepShare = options.keepShare ?? 0.97
  const sameLoadGain = options.sameLoadGain ?? 1.02
  const settledWindows = options.settledWindows ?? 10
  let maxBatch = options.maxBatch
  let maxInFlight = options.maxInFlight

  const clip = (point: OperatingPoint): OperatingPoint => ({
    batch: Math.max(1, Math.min(maxBatch, Math.round(point.batch))),
    inFlight: Math.max(1, Math.min(maxInFlight, Math.round(point.inFlight))),
  })

  let base = clip(options.start)
  /** The point under measurement now: the base, or a neighbour being tried. */
  let current = base
  let trying: Move | undefined
  /** A neighbour's rate, waiting for the base to be measured again after it (A/B/A: a machine that got busier or quieter meanwhile moves both). */
  let tried: { move: Move; point: OperatingPoint; rate: number } | undefined
  /** Best rate measured at the base since it became the base (bytes/s), undefined until measured. */
  let baseRate: number | undefined
  /** The base's rate when it settled: a change past a quarter of it means the node changed. */
  let settledRate: number | undefined
  let nextMove = 0
  let lostInRow = 0
  let windowsSettled = 0
  let epoch = 0
  let window = { startedAt: Number.NaN, calls: 0, bytes: 0, answers: 0 }
  let last: Throughput = { callsPerSecond: 0, bytesPerSecond: 0 }

  const settled = () => lostInRow >= MOVES.length

  function neighbour(move: Move): OperatingPoint {
    // batches step by half again or a third less; requests in flight by a quarter, at least one
    const batchStep = Math.max(1, Math.round(base.batch * (move.batch > 0 ? 0.5 : 1 / 3)))
    const inFlightStep = Math.max(1, Math.round(base.inFlight / 4))
    return clip({ batch: base.batch + move.batch * batchStep, inFlight: base.inFlight + move.inFlight * inFlightStep })
  }

  const same = (a: OperatingPoint, b: OperatingPoint) => a.batch === b.batch && a.inFlight === b.inFlight

  function moveTo(point: OperatingPoint) {
    current = point
    epoch++
    window = { startedAt: Number.NaN, calls: 0, bytes: 0, answers: 0 }
  }

  /** The next neighbour to try (skipping those a cap makes equal to the base), or undefined. */
  function pickMove(): Move | undefined {
    for (let i = 0; i < MOVES.length; i++) {
      const move = MOVES[(nextMove + i) % MOVES.length]!
      if (!same(neighbour(move), base)) {
        nextMove = (nextMove + i) % MOVES.length
        return move
      }
      lostInRow++
    }
    return undefined
  }

  /** A window at `current` is over: measure the base, try a neighbour, or judge it against the base around it. */
  function judge(rate: number) {
    if (trying) {
      // the neighbour measured: back to the base once more before judging
      tried = { move: trying, point: current, rate }
      trying = undefined
      return moveTo(base)
    }
    if (tried) return judgeTried(tried, rate)
    // the base measured: note it, then try a neighbour (at once while searching, now and then once settled)
    if (settled() && settledRate !== undefined && Math.abs(rate - settledRate) > 0.25 * settledRate) {
      // the node got faster or slower: search again from here
      lostInRow = 0
      baseRate = rate
    } else baseRate = baseRate === undefined || !settled() ? rate : Math.max(rate, baseRate * 0.9 + rate * 0.1)
    if (settled() && ++windowsSettled < settledWindows) return moveTo(base)
    windowsSettled = 0
    tryNext()
  }

  function tryNext() {
    const move = pickMove()
    if (!move) return moveTo(base)
    trying = move
    moveTo(neighbour(move))
  }

  /**
   * The base before and after a neighbour: more in flight must beat the better
   * of the two clearly; fewer in flight must deliver about as much as their
   * mean; another batch size at the same requests in flight must beat their mean.
   */
  function judgeTried(neighbourRun: { move: Move; point: OperatingPoint; rate: number }, after: number) {
    tried = undefined
    const { move, point, rate } = neighbourRun
    const before = baseRate ?? after
    const mean = (before + after) / 2
    const kept = move.inFlight > 0 ? rate > Math.max(before, after) * gainForLoad : move.inFlight < 0 ? rate >= mean * keepShare : rate > mean * sameLoadGain
    if (kept) {
      base = point
      baseRate = rate
      lostInRow = 0
      // the same way again while it pays
      const next = neighbour(move)
      if (same(next, base)) return moveTo(base)
      trying = move
      return moveTo(next)
    }
    baseRate = after
    lostInRow++
    nextMove = (nextMove + 1) % MOVES.length
    if (settled()) {
      settledRate = baseRate
      return moveTo(base)
    }
    tryNext()
  }

  return {
    /** The point requests are sent with now. */
    get point(): OperatingPoint {
      return current
    },
    /** Tag of the point now: an answer counts for the window only if its request was sent under it. */
    get epoch() {
      return epoch
    },
    get settled() {
      return settled()
    },
    /** Delivered per second over the last window judged. */
    get throughput(): Throughput {
      return last
    },
    /** An answer of `calls` calls in `bytes`, to a request sent under `sentEpoch`, while `earlierOut` requests sent under earlier points are still out. */
    answered(sentEpoch: number, calls: number, bytes: number, now: number, earlierOut = 0) {
      if (sentEpoch !== epoch) return
      if (Number.isNaN(window.startedAt)) {
        // the window opens at the point's first answer with nothing of the old point still out: until
        // then the node was still answering what was sent before the move, uncounted here
        if (earlierOut === 0) window.startedAt = now
        return
      }
      window.calls += calls
      window.bytes += bytes
      window.answers++
    },
    /** Looks at the window; returns true when the point changed. */
    tick(now: number): boolean {
      if (Number.isNaN(window.startedAt)) return false
      const elapsed = now - window.startedAt
      if (elapsed < windowMs || window.answers < minAnswers) return false
      last = { callsPerSecond: (window.calls * 1000) / elapsed, bytesPerSecond: (window.bytes * 1000) / elapsed }
      const before = current
      judge(last.bytesPerSecond)
      return !same(before, current)
    },
    /** The most calls a batch can carry now (the byte budget over the largest calls, a node's named limit): the search stays within it. */
    limitBatch(most: number) {
      const next = Math.max(1, Math.min(options.maxBatch, most))
      if (next === maxBatch) return
      maxBatch = next
      base = clip(base)
      current = clip(current)
    },
    /** A timeout: the batch is halved at once; the search may climb again if that pays. */
    halveBatch() {
      base = clip({ ...base, batch: base.batch / 2 })
      current = clip({ ...current, batch: Math.min(current.batch, base.batch) })
    },
    /** The batch goes to the most allowed now, from where the search goes on (a node that caps requests in flight). */
    batchToMost() {
      base = clip({ ...base, batch: maxBatch })
      // a fresh window: the one under way measured smaller batches
      if (current.batch !== maxBatch) moveTo(clip({ ...current, batch: maxBatch }))
    },
    /** The node pushed back (429s): the point never goes past this until the cap is raised. */
    capBatch(most: number) {
      maxBatch = Math.max(1, Math.min(maxBatch, most))
      base = clip(base)
      current = clip(current)
    },
    capInFlight(most: number) {
      maxInFlight = Math.max(1, Math.min(maxInFlight, most))
      base = clip(base)
      current = clip(current)
    },
    /** A cap learned from push-back is lifted again (to `most`, at most the configured one). */
    raiseInFlightCap(most: number) {
      maxInFlight = Math.max(maxInFlight, Math.min(options.maxInFlight, most))
    },
    get caps() {
      return { batch: maxBatch, inFlight: maxInFlight }
    },
  }
}

export type OperatingPointSearch = ReturnType<typeof createOperatingPointSearch>
