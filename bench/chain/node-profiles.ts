/**
 * How the replay node answers, beyond what it answers: four kinds of node
 * an operator points the indexer at, so that a bench cannot flatter a
 * transport tuned on one of them.
 *
 * - `fast`: today's replay node. Answers as soon as they are written out;
 *   large batches are cheap. Nothing is added.
 * - `serial`: a node whose answer cost grows faster than its size, as users
 *   met it (geth's batch handler runs a batch's calls one after another on
 *   one thread; a JavaScript proxy builds one answer string by appending to
 *   it). Every request costs the node's one thread
 *     requestMs + Σ over calls (callMs + msPerMiB × the call's answer MiB)
 *               + quadraticMsPerMiB2 × (the whole answer's MiB)²
 *   and that thread is shared by every request in flight (processor
 *   sharing), each extra one costing `contention` of its capacity (cache
 *   and GC pressure of the answers held at once). Its best operating point
 *   is interior: tiny batches pay `requestMs` each, large ones the square,
 *   many in flight the contention.
 * - `growing`: a node whose cost per call grows with the batch's length,
 *   light calls as much as heavy ones (a batch handler that serves a
 *   batch's calls one after another on one thread and does work per call
 *   in proportion to the batch: copies the answers gathered so far, scans
 *   the batch's list). Every request costs its one thread
 *     requestMs + Σ over calls (callMs + perCallPerCallMs × the batch's length
 *                               + msPerMiB × the call's answer MiB)
 *   shared by every request in flight as on `serial`. A batch of 200 light
 *   receipts then costs ~5× its 200 calls asked 20 at a time: bytes cannot
 *   tell, only time measured per call can.
 * - `remote`: a hosted provider. Every answer leaves `latencyMs` late, and a
 *   request arriving while `maxInFlight` are already held is answered 429
 *   with `Retry-After: retryAfterSeconds`.
 *
 * The serial node's thread is modelled, not burned: its cost is time on a
 * virtual clock (answers are held back by timers), so the model's work
 * never competes for the machine's cores with the client it measures, and
 * `modelledBusyMs` is the CPU that node would have spent.
 */

export type SerialOptions = {
  requestMs: number
  callMs: number
  msPerMiB: number
  quadraticMsPerMiB2: number
  contention: number
}

export type GrowingOptions = {
  requestMs: number
  callMs: number
  /** Each call's extra cost per call in its batch: n calls cost n² × this on top of their own. */
  perCallPerCallMs: number
  msPerMiB: number
  contention: number
}

export type RemoteOptions = { latencyMs: number; maxInFlight: number; retryAfterSeconds: number }

/** `capped` is a remote node that holds fewer requests and answers later (4 in flight, 120 ms): where every request is a round trip. */
export type ProfileName = 'fast' | 'serial' | 'growing' | 'remote' | 'capped'
export const profileNames: readonly ProfileName[] = ['fast', 'serial', 'growing', 'remote', 'capped']

export type ProfileSpec =
  | { name: 'fast' }
  | { name: 'serial'; options: SerialOptions }
  | { name: 'growing'; options: GrowingOptions }
  | { name: 'remote'; options: RemoteOptions }

/**
 * Calibrated on the bench's 200-transaction blocks (~0.35 MiB): the node
 * delivers most at batch 10, and batch 44 × 8 in flight (where a transport
 * that only grows ends up) gets ~0.48× of batch 10 × 4, as users measured
 * on a real node of this kind (0.46–0.48×; 5 × 4 beat 44 × 8 by 1.8×).
 */
export const defaultSerialOptions: SerialOptions = { requestMs: 2.5, callMs: 0.05, msPerMiB: 1.8, quadraticMsPerMiB2: 0.3, contention: 0.04 }
/**
 * The cheapest batch on it is √(requestMs / perCallPerCallMs) ≈ 22 calls,
 * whatever their size: 200 receipts in one batch cost the node ~3× what
 * the same receipts cost 20 at a time (0.45 vs 0.14 ms a call), blocks of
 * 0.35 MiB little more at 30 than at 20 (0.77 vs 0.74 ms a block).
 */
export const defaultGrowingOptions: GrowingOptions = { requestMs: 1, callMs: 0.05, perCallPerCallMs: 0.002, msPerMiB: 1.8, contention: 0.04 }
export const defaultRemoteOptions: RemoteOptions = { latencyMs: 50, maxInFlight: 8, retryAfterSeconds: 1 }
export const defaultCappedOptions: RemoteOptions = { latencyMs: 120, maxInFlight: 4, retryAfterSeconds: 1 }

export function profileSpec(name: ProfileName, overrides: Record<string, number> = {}): ProfileSpec {
  if (name === 'fast') return { name }
  if (name === 'serial') return { name, options: { ...defaultSerialOptions, ...overrides } }
  if (name === 'growing') return { name, options: { ...defaultGrowingOptions, ...overrides } }
  if (name === 'capped') return { name: 'remote', options: { ...defaultCappedOptions, ...overrides } }
  return { name, options: { ...defaultRemoteOptions, ...overrides } }
}

/** What one answer costs to produce: its calls' result sizes and the whole body's size, in bytes. */
export type AnswerWork = { callBytes: readonly number[]; answerBytes: number }

export type Refusal = { status: 429; retryAfterSeconds: number }

export type ProfileStats = {
  /** Busy time of the serial node's modelled thread (0 for the others). */
  modelledBusyMs: number
  /** Requests answered 429. */
  refused: number
  /** Most requests held at once. */
  maxInFlight: number
}

export type NodeProfile = {
  readonly spec: ProfileSpec
  /** On arrival: a refusal to answer instead of the request, or undefined to serve it. */
  admit(): Refusal | undefined
  /** Calls `send` when the node would have the answer on the wire. Every admitted request reaches here exactly once. */
  answer(work: AnswerWork, send: () => void): void
  /** Calls `send` when a refusal would reach the client. */
  refuse(send: () => void): void
  stats(): ProfileStats
  resetStats(): void
}

const MiB = 2 ** 20

/** The serial node's cost of one answer, in ms of its one thread when nothing else is in flight. */
export function serialWorkMs(options: SerialOptions, work: AnswerWork): number {
  let ms = options.requestMs
  for (const bytes of work.callBytes) ms += options.callMs + (options.msPerMiB * bytes) / MiB
  const answerMiB = work.answerBytes / MiB
  return ms + options.quadraticMsPerMiB2 * answerMiB * answerMiB
}

/** The growing node's cost of one answer, in ms of its one thread when nothing else is in flight. */
export function growingWorkMs(options: GrowingOptions, work: AnswerWork): number {
  const calls = work.callBytes.length
  let ms = options.requestMs
  for (const bytes of work.callBytes) ms += options.callMs + options.perCallPerCallMs * calls + (options.msPerMiB * bytes) / MiB
  return ms
}

/** Share of its thread the serial node gets through with `held` requests in flight. */
export function serialCapacity(options: { contention: number }, held: number): number {
  return 1 / (1 + options.contention * Math.max(0, held - 1))
}

function createFastProfile(): NodeProfile {
  return {
    spec: { name: 'fast' },
    admit: () => undefined,
    answer: (_work, send) => send(),
    refuse: (send) => send(),
    stats: () => ({ modelledBusyMs: 0, refused: 0, maxInFlight: 0 }),
    resetStats() {},
  }
}

function createRemoteProfile(options: RemoteOptions): NodeProfile {
  let held = 0
  let stats = { modelledBusyMs: 0, refused: 0, maxInFlight: 0 }
  const later = (send: () => void) => setTimeout(send, options.latencyMs)
  return {
    spec: { name: 'remote', options },
    admit() {
      if (held >= options.maxInFlight) {
        stats.refused++
        return { status: 429, retryAfterSeconds: options.retryAfterSeconds }
      }
      held++
      stats.maxInFlight = Math.max(stats.maxInFlight, held)
      return undefined
    },
    answer(_work, send) {
      later(() => {
        held--
        send()
      })
    },
    refuse: later,
    stats: () => ({ ...stats }),
    resetStats() {
      stats = { modelledBusyMs: 0, refused: 0, maxInFlight: held }
    },
  }
}

type Job = { remainingMs: number; send: () => void }

/**
 * Processor sharing on a virtual clock: each of the n jobs held progresses
 * at capacity(n)/n of real time; a timer fires at the next completion. A
 * late timer loses nothing: progress is computed from the real time that
 * passed, so the node's throughput is the model's whatever the event loop
 * was doing meanwhile.
 */
function createOneThreadProfile(
  spec: Extract<ProfileSpec, { name: 'serial' | 'growing' }>,
  workMs: (work: AnswerWork) => number,
  now: () => number = () => performance.now(),
): NodeProfile {
  const options = spec.options
  const jobs: Job[] = []
  let lastAdvance = now()
  let timer: NodeJS.Timeout | undefined
  let stats = { modelledBusyMs: 0, refused: 0, maxInFlight: 0 }

  function advance() {
    const at = now()
    const elapsed = at - lastAdvance
    lastAdvance = at
    if (jobs.length === 0 || elapsed <= 0) return
    stats.modelledBusyMs += elapsed
    const progress = (elapsed * serialCapacity(options, jobs.length)) / jobs.length
    for (const job of jobs) job.remainingMs -= progress
  }

  function completeDone() {
    // a few µs of slack: the timer that completes a job is not lost to float error
    for (let i = jobs.length - 1; i >= 0; i--) {
      if (jobs[i]!.remainingMs <= 0.001) jobs.splice(i, 1)[0]!.send()
    }
  }

  function scheduleNext() {
    if (timer) clearTimeout(timer)
    timer = undefined
    if (jobs.length === 0) return
    const shortest = Math.min(...jobs.map((job) => job.remainingMs))
    const wallMs = (shortest * jobs.length) / serialCapacity(options, jobs.length)
    timer = setTimeout(() => {
      timer = undefined
      advance()
      completeDone()
      scheduleNext()
    }, wallMs)
  }

  return {
    spec,
    admit: () => undefined,
    answer(work, send) {
      advance()
      jobs.push({ remainingMs: workMs(work), send })
      stats.maxInFlight = Math.max(stats.maxInFlight, jobs.length)
      scheduleNext()
    },
    refuse: (send) => send(),
    stats() {
      advance()
      return { ...stats }
    },
    resetStats() {
      advance()
      stats = { modelledBusyMs: 0, refused: 0, maxInFlight: jobs.length }
    },
  }
}

/** `now` is the clock the serial node's thread runs on (a test passes a fake one). */
export function createNodeProfile(spec: ProfileSpec, now?: () => number): NodeProfile {
  if (spec.name === 'serial') return createOneThreadProfile(spec, (work) => serialWorkMs(spec.options, work), now)
  if (spec.name === 'growing') return createOneThreadProfile(spec, (work) => growingWorkMs(spec.options, work), now)
  if (spec.name === 'remote') return createRemoteProfile(spec.options)
  return createFastProfile()
}
