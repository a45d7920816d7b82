import type { Rpc } from '../rpc/client.js'

/**
 * Where a chain's finalized history ends (issue 40.1): the node's
 * `finalized` block where it answers one, else the head less
 * `depth` blocks (FINALITY_DEPTH). A range wholly at or below it is
 * committed by the bulk path (store/bulk-commit.ts); every other range by
 * the tip path.
 *
 * The boundary only moves up: a node that answers a lower finalized block
 * than one seen before (another endpoint, a restart) does not make final
 * history reversible again. It is asked again at most every `refreshMs`,
 * and only when a range ends above the boundary known: during a backfill
 * almost every range is far below it. A node that answers neither tag
 * leaves the boundary where it was: the ranges above it take the tip path,
 * which is always safe.
 */
export type Finality = {
  /** Whether block `toBlock` (and so every block of a range ending there) is final. */
  isFinal(toBlock: number): Promise<boolean>
  /**
   * isFinal without waiting for the node once a boundary is known: a range
   * at the head is answered from the boundary known and a stale one is
   * refreshed behind it. The one range in RANGE_SIZE that found it stale
   * waited a round trip to the node on its way to the API (issue 40.3); a
   * range that became final meanwhile takes the tip path, which is safe.
   */
  isFinalNow(toBlock: number): Promise<boolean>
  /** The highest final block known (-1 before the first answer). */
  boundary(): number
  /**
   * That block's time (Unix seconds), once known: days before its day are
   * history (store/history-days.ts), where no tip row can fall.
   */
  boundaryTime(): number | undefined
}

export type FinalityOptions = {
  rpc: Pick<Rpc, 'request' | 'latestHeader'>
  /** Blocks behind the head taken as final when the node has no `finalized` tag. */
  depth: number
  refreshMs?: number
  now?: () => number
}

type Header = { number: string; timestamp?: string } | null

/** A final block as the node named it: its number and, when the header said, its time. */
type FinalBlock = { number: number; time: number | undefined }

const finalBlockOf = (header: NonNullable<Header>): FinalBlock => ({
  number: Number.parseInt(header.number, 16),
  time: header.timestamp === undefined ? undefined : Number.parseInt(header.timestamp, 16),
})

export function createFinality({ rpc, depth, refreshMs = 2_000, now = Date.now }: FinalityOptions): Finality {
  let boundary = -1
  let boundaryTime: number | undefined
  let askedAt = Number.NEGATIVE_INFINITY
  let asking: Promise<void> | undefined
  let answered = false
  // a node that refused the tag once is asked for the head from then on
  let hasFinalizedTag = true

  async function finalizedByNode(): Promise<FinalBlock | undefined> {
    if (!hasFinalizedTag) return undefined
    try {
      const header = await rpc.request<Header>('eth_getBlockByNumber', ['finalized', false])
      if (header) return finalBlockOf(header)
    } catch (error) {
      // the node's own error for the call (an unknown tag: -32602, -32601…) says it has none; anything else is a
      // fault of the moment, asked again next time
      if ((error as { kind?: string }).kind !== 'item_error') throw error
    }
    hasFinalizedTag = false
    return undefined
  }

  /** The head less `depth`, with its time (its header asked for it: the head's time is later than its own). */
  async function byDepth(): Promise<FinalBlock> {
    const number = Number.parseInt((await rpc.latestHeader()).number, 16) - depth
    if (number <= boundary) return { number, time: undefined }
    const header = number < 0 ? null : await rpc.request<Header>('eth_getBlockByNumber', [`0x${number.toString(16)}`, false])
    return { number, time: header ? finalBlockOf(header).time : undefined }
  }

  async function ask(): Promise<void> {
    askedAt = now()
    const finalized = (await finalizedByNode()) ?? (await byDepth())
    if (finalized.number > boundary || (finalized.number === boundary && boundaryTime === undefined)) {
      boundary = finalized.number
      boundaryTime = finalized.time
    }
    answered = true
  }

  /** Asks the node again if the boundary known is older than refreshMs; the ask in flight, if any. */
  function refreshIfStale(): Promise<void> | undefined {
    if (now() - askedAt >= refreshMs) {
      asking ??= ask()
        .catch(() => {})
        .finally(() => (asking = undefined))
    }
    return asking
  }

  async function isFinal(toBlock: number): Promise<boolean> {
    if (toBlock <= boundary) return true
    // a range past the boundary known waits for the node's next answer, asked now or already out: a worker's ranges
    // start together, and those asking while a question is out would take the tip path however far below the
    // node's finalized block they are (a restart's first ranges; a backfill begun while the head was low, whose
    // first ranges then went down the tip path: 56k rows at ~100 µs each on the dense bench). A range at the head
    // does not wait (isFinalNow)
    await (asking ?? refreshIfStale())
    return toBlock <= boundary
  }

  return {
    isFinal,
    async isFinalNow(toBlock) {
      if (!answered) return isFinal(toBlock)
      if (toBlock > boundary) void refreshIfStale()
      return toBlock <= boundary
    },
    boundary: () => boundary,
    boundaryTime: () => boundaryTime,
  }
}
