/**
 * Reusable buffers for a node's answers, one pool per transport.
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
 * the transport lets requests be in flight (its configured most): once the
 * first answers have been read, a backfill allocates nothing more. (Freeing
 * and allocating buffers of assorted sizes instead grew the process by
 * 130 MB over a 2M-transaction backfill: the allocator does not give such
 * memory back.)
 */
export type AnswerBufferOptions = {
  /** Free buffers kept per size: the most requests the transport has in flight. */
  keptPerSize: number
}

const SMALLEST = 64 * 1024
/** Larger buffers are not kept: a one-off huge answer should not stay resident. */
const LARGEST_KEPT = 32 * 1024 * 1024

/** The power-of-two size class a request of `bytes` falls in. */
const sizeOf = (bytes: number) => Math.max(SMALLEST, 2 ** Math.ceil(Math.log2(Math.max(1, bytes))))

export function createAnswerBuffers(options: AnswerBufferOptions) {
  const free = new Map<number, Buffer[]>()

  /** A buffer of at least `bytes` bytes: a free one of its size if there is one, else a new one. */
  function takeBuffer(bytes: number): Buffer {
    const size = sizeOf(bytes)
    // outside Node's small-buffer pool: these are large and long-lived
    return free.get(size)?.pop() ?? Buffer.allocUnsafeSlow(size)
  }

  /** Gives a buffer from takeBuffer back; the caller keeps no view of it. */
  function giveBack(buffer: Buffer): void {
    if (buffer.length > LARGEST_KEPT) return
    let kept = free.get(buffer.length)
    if (!kept) free.set(buffer.length, (kept = []))
    if (kept.length < options.keptPerSize) kept.push(buffer)
  }

  return {
    takeBuffer,
    giveBack,
    /** Free buffers held now (for tests). */
    get held() {
      let count = 0
      for (const kept of free.values()) count += kept.length
      return count
    },
  }
}

export type AnswerBuffers = ReturnType<typeof createAnswerBuffers>
