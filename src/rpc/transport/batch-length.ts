/**
 * How many calls go in one batch of a method that does not pace the
 * operating point (receipts, a block's receipts, headers): chosen, per
 * method, by the calls per second the node answers, never by bytes alone.
 *
 * The operating-point search (operating-point.ts) measures full blocks, the
 * bulk of the bytes. Other methods' calls are light, and their byte budget
 * lets a range's 200 receipts go in one request; on a node whose cost per
 * call grows with the batch's length (a batch served call after call on one
 * thread, each call's work growing with the batch), that one request costs
 * the node several times what ten of twenty cost, and nothing in the bytes
 * says so. So each such method climbs its own length, one coordinate, as
 * the operating point climbs its two: a window of answers at the base
 * length, one at a neighbour, the base again, and the neighbour is kept
 * only if it delivered clearly more calls per second than the mean of the
 * base around it. A backfill asks a range's receipts at once, a few hundred
 * a range, so a window at a long length is few requests: the first steps
 * halve or double the length (200 to 25 in three), and once neither way
 * wins, finer ones (a third shorter, half again longer) place it. Once
 * neither of those wins, the length is settled; a neighbour is tried again
 * now and then, so a node that changes is followed.
 *
 * Delivery is calls answered per second of the time this method had a
 * request out (the union of its requests' round trips): eight batches of
 * 25 in flight at once are judged by the time all eight took, as one batch
 * of 200 is by its own, so splitting that only queues on the node earns
 * nothing. That time is shared out to the requests as it passes (each of
 * the n out gets 1/n of it), and an answer brings its request's share: a
 * window of three answers is then as fair as one of twelve (three answers
 * cut from a stream of eight in flight measured 7 ms or 40 ms of busy time
 * by where the cut fell), so the first, long length is judged on few
 * requests. It starts at the longest batch allowed (the byte budget, caps
 * learned from the node, and the most calls the method is asked at once),
 * so a node whose cost per call is flat, or one far away whose round trip
 * is the cost, keeps long batches. Until a shorter length won, a window
 * is the fewest answers (and a range's calls): on a node that punishes
 * long batches each answer at the longest costs several times the best
 * length's. Once one won (the lengths measured are cheaper, the
 * differences smaller and the node's noise larger beside them), and in
 * the finer steps, a window takes four times as many.
 *
 * Pure: time comes in as arguments; no I/O.
 */
export type BatchLengthOptions = {
  /** Fewest answers a window needs (and at least the calls asked at once: a range's worth). */
  minAnswers?: number
  /** A neighbour is kept only if it delivers this much more than the base around it. */
  gain?: number
  /** Windows at a settled length between two tries of a neighbour. */
  settledWindows?: number
}

/**
 * `sent`: requests sent in the window that have not failed, `sentCalls`
 * their calls, `back` those of them answered; `firstOut`: those sent
 * before its first answer and still out.
 */
type Window = { calls: number; answers: number; shareMs: number; sent: number; sentCalls: number; back: number; firstOut: number }

/**
 * A request out: its calls, the point it was sent under, its share clock
 * then, whether its answer counts in the window, whether the window
 * counted it as sent (not one sent ahead for the next point), and whether
 * it went before the window's first answer.
 */
type Request = { calls: number; epoch: number; shareAtSend: number; counts: boolean; inSent: boolean; first: boolean }

type KeyState = {
  /** The length settled on or being left; +Infinity until a shorter one won: the longest allowed, whatever that becomes. */
  base: number
  /** The neighbour under trial (its length), or undefined while the base is measured. */
  trying: number | undefined
  /** A neighbour's rate, waiting for the base to be measured again after it. */
  tried: { length: number; rate: number } | undefined
  baseRate: number | undefined
  /** Direction of the next neighbour tried: shorter first (the expensive mistake is too long). */
  direction: -1 | 1
  /** Halving and doubling first, then finer steps. */
  coarse: boolean
  lostInRow: number
  windowsSettled: number
  /** The most calls a batch may have now (bytes, caps, calls asked at once). */
  most: number
  /** The most calls asked of this method at once lately (decaying). */
  demand: number
  epoch: number
  /** Requests out, by tag; how many of them were sent under an earlier epoch. */
  requests: Map<number, Request>
  outEarlier: number
  /** Busy time shared out so far: each ms with n requests out adds 1/n ms (a request's share is its difference from send to answer). */
  shareClock: number
  sharedUntil: number
  window: Window | undefined
}

const emptyWindow = (): Window => ({ calls: 0, answers: 0, shareMs: 0, sent: 0, sentCalls: 0, back: 0, firstOut: 0 })

export function createBatchLengths(options: BatchLengthOptions = {}) {
  const minAnswers = options.minAnswers ?? 3
  const gain = options.gain ?? 1.05
  const settledWindows = options.settledWindows ?? 10
  /** A neighbour this much better than the base before it is kept at once. */
  const clearWin = 1.25
  const states = new Map<string, KeyState>()

  function stateOf(key: string): KeyState {
    let state = states.get(key)
    if (!state) {
      state = {
        base: Number.POSITIVE_INFINITY,
        trying: undefined,
        tried: undefined,
        baseRate: undefined,
        direction: -1,
        coarse: true,
        lostInRow: 0,
        windowsSettled: 0,
        most: Number.POSITIVE_INFINITY,
        demand: 0,
        epoch: 0,
        requests: new Map(),
        outEarlier: 0,
        shareClock: 0,
        sharedUntil: 0,
        window: undefined,
      }
      states.set(key, state)
    }
    return state
  }

  const clip = (state: KeyState, length: number) => Math.max(1, Math.min(state.most, state.demand > 0 ? state.demand : Number.POSITIVE_INFINITY, Math.round(length)))
  const settled = (state: KeyState) => state.lostInRow >= 2

  function current(state: KeyState): number {
    return clip(state, state.trying ?? state.base)
  }

  /**
   * The first window (the longest length, nothing measured yet) has sent
   * enough to be judged: what goes meanwhile goes at the neighbour it will
   * try next, not at the longest, which may cost the node several times as
   * much a call (its answers count nowhere: the node shared them with the
   * longest requests).
   */
  function firstWindowSent(state: KeyState): boolean {
    const window = state.window
    if (state.baseRate !== undefined || state.trying !== undefined || !window) return false
    return window.sent >= minAnswers && window.sentCalls >= state.demand
  }

  function neighbour(state: KeyState, direction: -1 | 1): number {
    const base = current({ ...state, trying: undefined })
    const factor = state.coarse ? (direction > 0 ? 2 : 0.5) : direction > 0 ? 1.5 : 2 / 3
    return clip(state, direction > 0 ? Math.max(base + 1, base * factor) : Math.min(base - 1, base * factor))
  }

  /** A new point to measure: answers to requests sent before it no longer count, and its window opens once none of them is out. */
  function moveTo(state: KeyState, trying: number | undefined) {
    state.trying = trying
    state.epoch++
    state.outEarlier = [...state.requests.values()].filter((request) => request.epoch < state.epoch).length
    state.window = undefined
  }

  /** Opens the window of the point once no request sent before it is out: requests sent from then on share the node with none of another length. */
  function openWindowIfClean(state: KeyState) {
    if (!state.window && state.outEarlier === 0) state.window = emptyWindow()
  }

  /** The busy time up to `now` shared out among the requests out. */
  function share(state: KeyState, now: number) {
    if (state.requests.size > 0 && now > state.sharedUntil) state.shareClock += (now - state.sharedUntil) / state.requests.size
    state.sharedUntil = Math.max(state.sharedUntil, now)
  }

  /** A window is over at `rate` calls/s: the base measured, a neighbour tried, or one judged against the base around it. */
  function judge(state: KeyState, rate: number) {
    if (state.trying !== undefined) {
      state.tried = { length: state.trying, rate }
      // far better than the base before it: no drift of the machine explains that, kept without measuring the base again
      if (state.baseRate !== undefined && rate > state.baseRate * clearWin) return judgeTried(state, state.tried, state.baseRate)
      return moveTo(state, undefined)
    }
    if (state.tried) return judgeTried(state, state.tried, rate)
    if (settled(state) && state.baseRate !== undefined && Math.abs(rate - state.baseRate) > 0.25 * state.baseRate) state.lostInRow = 0
    state.baseRate = rate
    if (settled(state) && ++state.windowsSettled < settledWindows) return moveTo(state, undefined)
    state.windowsSettled = 0
    tryNeighbour(state)
  }

  function tryNeighbour(state: KeyState) {
    const base = current({ ...state, trying: undefined })
    for (let i = 0; i < 2; i++) {
      const next = neighbour(state, state.direction)
      if (next !== base) return moveTo(state, next)
      state.lostInRow++
      state.direction = state.direction > 0 ? -1 : 1
    }
    moveTo(state, undefined)
  }

  function judgeTried(state: KeyState, tried: { length: number; rate: number }, after: number) {
    state.tried = undefined
    const before = state.baseRate ?? after
    if (tried.rate > ((before + after) / 2) * gain) {
      // kept: the same way again while it pays
      // a longer length that won stays the longest allowed: on a node that rewards length, the budget decides
      state.base = tried.length >= state.most ? Number.POSITIVE_INFINITY : tried.length
      state.baseRate = tried.rate
      state.lostInRow = 0
      const next = neighbour(state, state.direction)
      return moveTo(state, next === tried.length ? undefined : next)
    }
    state.baseRate = after
    state.lostInRow++
    state.direction = state.direction > 0 ? -1 : 1
    if (settled(state) && state.coarse) {
      // neither half nor double wins: finer steps from here
      state.coarse = false
      state.lostInRow = 0
    }
    if (settled(state)) return moveTo(state, undefined)
    tryNeighbour(state)
  }

  let nextTag = 0

  return {
    /** Calls to put in the next batch of `key`, at most `most` (the byte budget and caps say so). */
    lengthFor(key: string, most: number): number {
      const state = stateOf(key)
      // a budget or a demand that moves the clip does not move the point: "the longest allowed" stays one point
      // (a window restarted at each range's own count of calls would never end)
      state.most = Math.max(1, most)
      return firstWindowSent(state) ? neighbour(state, state.direction) : current(state)
    },
    /** `count` calls of `key` are asked at once: no batch is longer (a longer length would change nothing to measure). */
    asked(key: string, count: number) {
      const state = stateOf(key)
      state.demand = Math.max(count, Math.round(state.demand * 0.99))
    },
    /** A request of `calls` calls of `key` goes out at `now`; returns the tag its answer is counted under. */
    sent(key: string, calls: number, now: number): number {
      const state = stateOf(key)
      share(state, now)
      openWindowIfClean(state)
      const tag = nextTag++
      if (firstWindowSent(state)) {
        // at the next point: its answer counts there once the longest requests are back (its share is its own,
        // whatever else was out)
        state.requests.set(tag, { calls, epoch: state.epoch + 1, shareAtSend: state.shareClock, counts: true, inSent: false, first: false })
        return tag
      }
      const window = state.window
      const first = window !== undefined && window.answers === 0
      if (window) {
        window.sent++
        window.sentCalls += calls
      }
      if (first) window.firstOut++
      // sent before the window opened: it shared the node with requests of another length
      state.requests.set(tag, { calls, epoch: state.epoch, shareAtSend: state.shareClock, counts: window !== undefined, inSent: window !== undefined, first })
      return tag
    },
    /** The request tagged `tag` is answered at `now` with `calls` calls served (undefined when it failed: its time counts, no answer). */
    answered(key: string, tag: number, calls: number | undefined, now: number) {
      const state = stateOf(key)
      const request = state.requests.get(tag)
      if (!request) return
      share(state, now)
      state.requests.delete(tag)
      if (request.epoch > state.epoch) return
      if (request.epoch < state.epoch) {
        state.outEarlier = Math.max(0, state.outEarlier - 1)
        return openWindowIfClean(state)
      }
      const window = state.window
      if (!window || !request.counts) return
      window.shareMs += state.shareClock - request.shareAtSend
      if (request.first) window.firstOut--
      if (calls !== undefined) {
        window.calls += calls
        window.answers++
        window.back++
      } else if (request.inSent) {
        // failed (a refusal, a timeout): it will not answer, and the first window waits for what it sent
        window.sent--
        window.sentCalls -= request.calls
      }
      // at the longest and its half: the fewest answers (a long batch may cost the node several times the best's); then more.
      // The first window is over once what it sent is back (the calls asked at once may have grown since it sent them).
      const answers = state.coarse && state.base === Number.POSITIVE_INFINITY ? minAnswers : 4 * minAnswers
      const enough = firstWindowSent(state) ? window.back >= window.sent : window.answers >= answers && window.calls >= state.demand
      // never before the requests that went together at its start are all back: a node serving requests in turn served
      // the first answers alone while the others waited, and the others' shares hold that time
      if (!enough || window.answers === 0 || window.firstOut > 0 || window.shareMs <= 0) return
      judge(state, (window.calls * 1000) / window.shareMs)
      openWindowIfClean(state)
    },
    /** Whether `key`'s batches are sized here (it was asked through `asked`). */
    tracks: (key: string) => states.has(key),
    /** Where `key` is now, for /metrics and tests. */
    read(key: string) {
      const state = states.get(key)
      return state && { length: current(state), base: state.base, settled: settled(state), callsPerSecond: state.baseRate }
    },
  }
}

export type BatchLengths = ReturnType<typeof createBatchLengths>
