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
 * Buffers come in power-of-two sizes. The pool keeps at most `kept` free
 * buffers in all (the most requests the transport has in flight), the
 * largest ones, and serves a request from the smallest free buffer that
 * holds it: once the largest answers have been seen, a backfill allocates
 * nothing more. Keeping that many of *every* size instead (answers of a
 * dense chain run from 1 to 32 MiB as batch sizes move) held ~300 MB of free
 * buffers on the dense bench; and freeing and allocating buffers of
 * assorted sizes grew the process by 130 MB over a 2M-transaction backfill,
 * the allocator not giving such memory back.
 */
export type AnswerBufferOptions = {
  /** Free buffers kept in all, at first: the most requests the transport has in flight (`keep` changes it). */
  kept: number
  /** Most bytes one answer may have (RPC_MAX_ANSWER_BYTES): a larger one is not read to its end. */
  mostBytes?: number
}

/** Past this an answer is not one we asked for (RPC_MAX_ANSWER_BYTES's default). */
export const DEFAULT_MOST_ANSWER_BYTES = 256 * 1024 * 1024

/**
 * An answer over the most bytes an answer may have. Anyone can run a node,
 * and a node (or a proxy in front of it) that streams an endless body would
 * otherwise grow the buffer until the request timeout, gigabytes a second:
 * eight requests in flight could take the machine's memory. The transport
 * treats it as an answer too large for its batch (re-asked in halves; a
 * single call that still passes it fails, as any call that cannot be fetched).
 */
export class AnswerTooLargeError extends Error {
  override name = 'AnswerTooLargeError'
  constructor(readonly mostBytes: number) {
    super(`the node's answer passed ${mostBytes} bytes (RPC_MAX_ANSWER_BYTES); not read further`)
  }
}

const SMALLEST = 64 * 1024
/** Larger buffers are not kept: a one-off huge answer should not stay resident. */
const LARGEST_KEPT = 32 * 1024 * 1024
/**
 * Free buffers kept, in bytes at most: a dense chain's answers take 32 MiB
 * buffers, and one more than the requests in flight of those held 100–190 MiB
 * free at its peak (BENCHMARKS.md). Past glibc's mmap threshold (at most 32 MiB)
 * a buffer is a mapping of its own: letting one go returns it to the system, and
 * a new one costs its page faults.
 */
const MOST_FREE_BYTES = 64 * 1024 * 1024
/** Room taken up front for a declared length at most: a node's header is no reason to allocate gigabytes before a byte arrives. */
const MOST_RESERVED = 32 * 1024 * 1024

/** The power-of-two size class a request of `bytes` falls in. */
const sizeOf = (bytes: number) => Math.max(SMALLEST, 2 ** Math.ceil(Math.log2(Math.max(1, bytes))))

export function createAnswerBuffers(options: AnswerBufferOptions) {
  const mostBytes = options.mostBytes ?? DEFAULT_MOST_ANSWER_BYTES
  // smallest first
  const free: Buffer[] = []
  let kept = options.kept
  const trim = () => {
    // over the count or the bytes, the smallest go: a larger buffer serves their requests too
    if (free.length > kept) free.splice(0, free.length - kept)
    let bytes = free.reduce((sum, buffer) => sum + buffer.length, 0)
    while (free.length > 1 && bytes > MOST_FREE_BYTES) bytes -= free.shift()!.length
  }

  /** A buffer of at least `bytes` bytes: the smallest free one that holds them, else a new one. */
  function takeBuffer(bytes: number): Buffer {
    const size = sizeOf(bytes)
    const fitting = free.findIndex((buffer) => buffer.length >= size)
    if (fitting >= 0) return free.splice(fitting, 1)[0]!
    // outside Node's small-buffer pool: these are large and long-lived
    return Buffer.allocUnsafeSlow(size)
  }

  /** Gives a buffer from takeBuffer back; the caller keeps no view of it. */
  function giveBack(buffer: Buffer): void {
    if (buffer.length > LARGEST_KEPT || free.includes(buffer)) return
    const at = free.findIndex((other) => other.length >= buffer.length)
    free.splice(at < 0 ? free.length : at, 0, buffer)
    trim()
  }

  /** Throws AnswerTooLargeError when an answer of `bytes` is more than one may have. */
  function admit(bytes: number): void {
    if (bytes > mostBytes) throw new AnswerTooLargeError(mostBytes)
  }

  /** A buffer for an answer that declares `bytes` (Content-Length), reserving no more than MOST_RESERVED up front. */
  function reserve(bytes: number): Buffer {
    admit(bytes)
    return takeBuffer(Math.min(bytes, MOST_RESERVED))
  }

  /**
   * A larger buffer holding `used` bytes of `buffer` (given back), with room
   * for `atLeast` bytes in all: doubled, but never past the most an answer
   * may have (AnswerTooLargeError when `atLeast` is).
   */
  function grow(buffer: Buffer, used: number, atLeast: number): Buffer {
    admit(atLeast)
    const larger = takeBuffer(Math.max(atLeast, Math.min(2 * buffer.length, mostBytes)))
    buffer.copy(larger, 0, 0, used)
    giveBack(buffer)
    return larger
  }

  /**
   * Keeps `count` free buffers from now on (the transport's requests in
   * flight now, and one to spare for the search's next step up): a dense
   * chain's answers run to 32 MiB, and 8 of them kept for a node driven at
   * 3 in flight were 150 MB held for nothing.
   */
  function keep(count: number): void {
    kept = Math.max(1, count)
    trim()
  }

  return {
    mostBytes,
    takeBuffer,
    reserve,
    grow,
    giveBack,
    keep,
    /** Free buffers held now, and their bytes (for tests). */
    get held() {
      return { count: free.length, bytes: free.reduce((sum, buffer) => sum + buffer.length, 0) }
    },
  }
}

export type AnswerBuffers = ReturnType<typeof createAnswerBuffers>
