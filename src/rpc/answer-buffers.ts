/**
 * Reusable buffers for the node's answers.
 *
 * A backfill reads gigabytes of answers a few megabytes at a time. Read into
 * a fresh Buffer each, every answer costs page faults on new memory, a copy
 * out of the chunks, and external memory that pushes V8 into collections
 * (about a fifth of the indexer's time in the backfill profile). Answers are
 * read synchronously right after they arrive, so a handful of buffers,
 * reused, holds them all: the caller takes one, reads the answer, and gives
 * it back (`release`), after which nothing may keep a view of it.
 */
const MiB = 1024 * 1024
/** Sizes are rounded up to a whole MiB (64 KiB below that), so answers of similar size share buffers. */
const roundUp = (bytes: number) => (bytes < MiB ? 64 * 1024 * Math.max(1, Math.ceil(bytes / (64 * 1024))) : MiB * Math.ceil(bytes / MiB))
/** Larger buffers are not kept: a one-off huge answer should not stay resident. */
const MAX_KEPT_BUFFER = 32 * MiB
/** Most bytes kept free at once (the default byte budget is 10 MiB an answer, 8 in flight). */
const MAX_KEPT_TOTAL = 96 * MiB

const free: Buffer[] = []
let keptBytes = 0

/** A buffer of at least `bytes` bytes: a free one if one is large enough, else a new one. */
export function takeBuffer(bytes: number): Buffer {
  let best = -1
  for (let i = 0; i < free.length; i++) {
    if (free[i]!.length >= bytes && (best < 0 || free[i]!.length < free[best]!.length)) best = i
  }
  if (best >= 0) {
    const [buffer] = free.splice(best, 1)
    keptBytes -= buffer!.length
    return buffer!
  }
  // outside Node's small-buffer pool: these are large and long-lived
  return Buffer.allocUnsafeSlow(roundUp(bytes))
}

/** Gives a buffer from takeBuffer back; the caller keeps no view of it. */
export function giveBack(buffer: Buffer): void {
  if (buffer.length > MAX_KEPT_BUFFER) return
  // past the budget, drop the oldest free buffers first: the newest match the answers now coming
  while (free.length > 0 && keptBytes + buffer.length > MAX_KEPT_TOTAL) keptBytes -= free.shift()!.length
  free.push(buffer)
  keptBytes += buffer.length
}
