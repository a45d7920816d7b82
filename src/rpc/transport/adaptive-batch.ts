import { createBatchCaps } from './batch-caps.js'
import { createBatchLengths } from './batch-length.js'

/**
 * How many calls go into one JSON-RPC batch, per node.
 *
 * The size wanted is the operating-point search's (operating-point.ts,
 * `setSize`); here it is bounded by what the node pushed back with: the
 * limit it names (or half the batch) on a batch-limit answer, a byte budget
 * on "response too large", half the batch on a timeout (until the search
 * sets it again), and per method the caps learned from batches that broke
 * without naming a limit or timed out whole (batch-caps.ts). Independently, a batch is bounded
 * by bytes: the size of earlier answers per method tells how many calls fit
 * in the byte budget, so 1 MB blocks go a few at a time while small ones go
 * by the dozen. A node that caps the requests in flight below the most
 * configured gets a larger budget per batch (`setShare`), so its fewer
 * answers in flight may carry as many bytes as the most would: on a node
 * that answers late, each request is a round trip, and more bytes per
 * request is the only way left to more throughput.
 *
 * Bytes only bound a batch. The calls that do not pace the operating point
 * (receipts and the like, light beside full blocks) get their length from
 * what the node delivers: batch-length.ts climbs it per method by the calls
 * per second answered, within the byte budget and the caps above.
 */
export type BatchSizerOptions = {
  /** The most calls per batch, and where it starts. */
  maxSize: number
  /** The most bytes an answer should carry. */
  maxBytes: number
  /** Told once per limit learned: "node caps batches at 10 calls; using 10". */
  onLimit?: (message: string, details: Record<string, number>) => void
}

const MiB = 2 ** 20

export function createBatchSizer(options: BatchSizerOptions) {
  let size = options.maxSize
  /** A call count the node refused, or undefined: the size never grows to it again. */
  let nodeCap = Number.POSITIVE_INFINITY
  /** A byte budget the node named by refusing a larger answer: never passed, whatever the share. */
  let nodeBytes = Number.POSITIVE_INFINITY
  /** How many times `maxBytes` a batch may carry (see above). */
  let share = 1
  const batchBytes = () => Math.min(nodeBytes, options.maxBytes * share)
  const bytesPerCall = new Map<string, number>()
  /** Per method, caps learned from batches that broke without naming a limit or timed out whole (batch-caps.ts). */
  const caps = createBatchCaps()
  /** Per method not pacing the operating point, the length the node answers fastest (batch-length.ts). */
  const lengths = createBatchLengths()

  const ceiling = () => Math.min(options.maxSize, nodeCap)

  /** The most calls any batch can carry now: the configured most, a limit the node named, the byte budget over the largest calls. */
  function mostCalls(): number {
    const largest = Math.max(0, ...bytesPerCall.values())
    return Math.max(1, Math.min(ceiling(), largest > 0 ? Math.floor(batchBytes() / largest) : Number.POSITIVE_INFINITY))
  }

  /**
   * Calls to put in the next batch of `method`. The searched size counts the
   * heaviest calls (full blocks); a lighter method's batch may carry as many
   * bytes (on a remote node every request costs a round trip), and within
   * that its length is the one the node answers fastest (batch-length.ts).
   */
  function sizeFor(method: string): number {
    const most = mostFor(method)
    return lengths.tracks(method) ? lengths.lengthFor(method, most) : most
  }

  /** The most calls a batch of `method` may carry: the byte budget, the searched size, the node's caps. */
  function mostFor(method: string): number {
    const perCall = bytesPerCall.get(method)
    if (perCall === undefined) return Math.max(1, Math.min(size, caps.capFor(method)))
    const budget = Math.min(batchBytes(), size * Math.max(...bytesPerCall.values()))
    return Math.max(1, Math.min(ceiling(), Math.floor(budget / perCall), caps.capFor(method)))
  }

  /** Bytes per call seen in an answer (or in the part of it that fit under the node's size limit). */
  function measured(method: string, calls: number, bytes: number) {
    const perCall = bytes / calls
    const previous = bytesPerCall.get(method)
    // the largest recent figure, decaying slowly: blocks vary, and a batch that overshoots costs a retry
    bytesPerCall.set(method, previous === undefined ? perCall : Math.max(perCall, previous * 0.99))
  }

  function succeeded(method: string, calls: number, bytes: number) {
    measured(method, calls, bytes)
    caps.served(method, calls)
  }

  /** The node refused a batch of `sent` calls, naming its limit or not. */
  function batchRefused(sent: number, named?: number) {
    const cap = named !== undefined && named < sent ? named : Math.max(1, Math.floor(sent / 2))
    if (cap >= nodeCap) return
    nodeCap = cap
    size = Math.min(size, cap)
    const text = cap === 1 ? 'node accepts no batches; sending single calls' : `node caps batches at ${named ?? `fewer than ${sent}`} calls; using ${cap}`
    options.onLimit?.(text, { batch_size: cap, refused: sent })
  }

  /** The answer passed the node's size limit after `answeredBytes` of good calls. */
  function responseTooLarge(sent: number, answeredBytes: number) {
    size = Math.max(1, Math.min(size, Math.floor(sent / 2)))
    // the good part of the answer is what fits; keep a margin under it
    const budget = Math.floor(answeredBytes * 0.8)
    if (budget > 0 && budget < batchBytes()) {
      nodeBytes = budget
      options.onLimit?.(`node caps batch answers near ${(answeredBytes / MiB).toFixed(1)} MB; using ${(budget / MiB).toFixed(1)} MB`, {
        max_bytes: budget,
      })
    }
  }

  /** A batch of `sent` calls of `method` broke (connection dropped, answer cut or unreadable, a proxy's error page) while a single call went through. */
  function broke(method: string, sent: number) {
    const cap = caps.broke(method, sent)
    if (cap !== undefined) options.onLimit?.(`batches of ${sent} ${method} calls break on this node; using ${cap}`, { batch_size: cap, refused: sent })
  }

  function timedOut(sent: number) {
    size = Math.max(1, Math.min(size, Math.floor(sent / 2)))
  }

  return {
    sizeFor,
    mostCalls,
    /** The size the search wants (bounded here by the node's limits). */
    setSize(wanted: number) {
      size = Math.max(1, Math.min(ceiling(), Math.round(wanted)))
    },
    /** A batch may carry `times` × maxBytes (at least once it): the node caps requests in flight at 1/`times` of the most. */
    setShare(times: number) {
      share = Math.max(1, times)
    },
    /** `count` calls of `method`, which does not pace the operating point, are asked at once: its batches' length is measured (batch-length.ts). */
    asked: (method: string, count: number) => lengths.asked(method, count),
    /** A request of `calls` calls of `method` goes out at `now`: a tag for its answer, or undefined when its length is not measured. */
    sent: (method: string, calls: number, now: number) => (lengths.tracks(method) ? lengths.sent(method, calls, now) : undefined),
    /** The request tagged `tag` answered at `now`, `calls` of its calls served (undefined: none, it failed). */
    answered: (method: string, tag: number | undefined, calls: number | undefined, now: number) => {
      if (tag !== undefined) lengths.answered(method, tag, calls, now)
    },
    /** Whether an answer of `method` has told its size per call yet. */
    knowsBytes: (method: string) => bytesPerCall.has(method),
    measured,
    succeeded,
    batchRefused,
    responseTooLarge,
    broke,
    timedOut,
    /** The batch size now in use for `method` (the /metrics gauge). */
    current: sizeFor,
  }
}

export type BatchSizer = ReturnType<typeof createBatchSizer>
