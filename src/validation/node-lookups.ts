import pLimit from 'p-limit'
import { HashNotFoundError, ValidationBusyError } from './errors.js'

/**
 * What asking the node for a hash may cost, whoever asks. A lookup the index
 * cannot answer costs the operator's node (and its quota) up to
 * MAX_NODE_CALLS_PER_LOOKUP calls; anyone can ask for made-up hashes. So:
 *
 * - a hash the node did not know is answered 404 again for `missCacheMs`
 *   without asking (a client repeating an unknown hash costs one lookup);
 * - the same lookup asked while it is in flight waits for that one;
 * - every other lookup is first admitted by the caller (`admit`: the HTTP
 *   layer's per-client and all-clients budgets, which may refuse);
 * - at most `concurrency` lookups ask the node at once in this process, at
 *   most `maxWaiting` more wait their turn, the rest are refused
 *   (ValidationBusyError) rather than queued without bound.
 *
 * Together: one client costs the node at most its budget × the calls of one
 * lookup, all clients together at most the global budget × the same, and
 * never more than `concurrency` lookups at a time.
 */
export type NodeLookupOptions = {
  concurrency: number
  /** Lookups that may wait for a slot; default 8 per slot. */
  maxWaiting?: number
  /** How long a miss is remembered (0: never). */
  missCacheMs: number
  /** Misses remembered at most; the oldest are forgotten first. */
  maxMisses?: number
  /** Called for each lookup refused because too many wait already. */
  onBusy?: (() => void) | undefined
  now?: () => number
}

/** How long a refused lookup is asked to wait before trying again. */
const BUSY_RETRY_MS = 2_000
const DEFAULT_MAX_MISSES = 50_000

export function createNodeLookups<T>(options: NodeLookupOptions) {
  const now = options.now ?? Date.now
  const limit = pLimit(options.concurrency)
  const maxWaiting = options.maxWaiting ?? options.concurrency * 8
  const maxMisses = options.maxMisses ?? DEFAULT_MAX_MISSES
  const misses = new Map<string, { message: string; until: number }>()
  const inFlight = new Map<string, Promise<T>>()
  const admitting = new Map<string, Promise<void>>()

  function recentMiss(key: string): HashNotFoundError | undefined {
    const miss = misses.get(key)
    if (!miss) return undefined
    if (miss.until > now()) return new HashNotFoundError(miss.message)
    misses.delete(key)
    return undefined
  }

  function remember(key: string, error: unknown) {
    if (!(error instanceof HashNotFoundError) || options.missCacheMs <= 0) return
    misses.delete(key)
    // a Map iterates in insertion order: the first key is the oldest miss
    if (misses.size >= maxMisses) misses.delete(misses.keys().next().value!)
    misses.set(key, { message: error.message, until: now() + options.missCacheMs })
  }

  async function ask(key: string, lookup: () => Promise<T>): Promise<T> {
    if (limit.activeCount >= options.concurrency && limit.pendingCount >= maxWaiting) {
      options.onBusy?.()
      throw new ValidationBusyError(`validation: ${limit.activeCount + limit.pendingCount} lookups already wait for the node`, BUSY_RETRY_MS)
    }
    try {
      return await limit(lookup)
    } catch (error) {
      remember(key, error)
      throw error
    }
  }

  /**
   * The node's answer for `key`: a remembered miss, the lookup already in
   * flight for it, or — once `admit` lets it through — a new lookup in turn.
   * Requests for a key whose first request is still being admitted wait for
   * that admission: admitted, they share its lookup; refused (that client's
   * budget, not theirs), each is admitted on its own.
   */
  async function run(key: string, admit: () => Promise<void>, lookup: () => Promise<T>): Promise<T> {
    for (;;) {
      const miss = recentMiss(key)
      if (miss) throw miss
      const running = inFlight.get(key)
      if (running) return running
      const pending = admitting.get(key)
      if (!pending) break
      await pending
    }
    const admission = admit()
    admitting.set(key, admission.then(() => undefined, () => undefined))
    try {
      await admission
    } finally {
      admitting.delete(key)
    }
    const promise = ask(key, lookup).finally(() => inFlight.delete(key))
    inFlight.set(key, promise)
    return promise
  }

  return { run, inFlight: () => limit.activeCount, waiting: () => limit.pendingCount, misses: () => misses.size }
}

export type NodeLookups<T> = ReturnType<typeof createNodeLookups<T>>
