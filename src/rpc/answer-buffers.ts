/**
 * Reusable buffers for the node's answers.
 *
 * A backfill reads gigabytes of answers a few megabytes at a time. Read into
 * a fresh Buffer each, every answer costs page faults on new memory, a copy
 * out of the chunks, and external memory that pushes V8 into collections
 * (about a fifth of the indexer's time in the backfill profile). Answers are
 * read synchronously right after they arrive, so a handful of buffers,
 * reused, holds them all: the caller takes one, reads the answer, and gives
 * it back (`giveBack`), after which nothing may keep a view of it.
 *
 * Buffers come in power-of-two sizes, and each size keeps as many free as
 * requests can be in flight: once the first answers have been read, a
 * backfill allocates nothing more. (Freeing and allocating buffers of
 * assorted sizes instead grew the process by 130 MB over a 2M-transaction
 * backfill: the allocator does not give such memory back.)
 */
const SMALLEST = 64 * 1024
/** Larger buffers are not kept: a one-off huge answer should not stay resident. */
const LARGEST_KEPT = 32 * 1024 * 1024
/** Free buffers kept per size: the transport's most requests in flight (RPC_MAX_CONCURRENCY's default). */
const KEPT_PER_SIZE = 8

const free = new Map<number, Buffer[]>()

/** The power-of-two size class a request of `bytes` falls in. */
const sizeOf = (bytes: number) => Math.max(SMALLEST, 2 ** Math.ceil(Math.log2(Math.max(1, bytes))))

/** A buffer of at least `bytes` bytes: a free one of its size if there is one, else a new one. */
export function takeBuffer(bytes: number): Buffer {
  const size = sizeOf(bytes)
  // outside Node's small-buffer pool: these are large and long-lived
  return free.get(size)?.pop() ?? Buffer.allocUnsafeSlow(size)
}

/** Gives a buffer from takeBuffer back; the caller keeps no view of it. */
export function giveBack(buffer: Buffer): void {
  if (buffer.length > LARGEST_KEPT) return
  let kept = free.get(buffer.length)
  if (!kept) free.set(buffer.length, (kept = []))
  if (kept.length < KEPT_PER_SIZE) kept.push(buffer)
}
