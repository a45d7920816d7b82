/**
 * The attribution rows one worker process holds between a range's fetch and
 * the end of its commit, on either thread, bounded by ROWS_IN_FLIGHT.
 *
 * A range is worked on in a worker slot from its blocks to its commit, and
 * there are four slots per block fetch (worker.ts) so that fetches never
 * idle behind commits. Where the commit is the slower stage — a dense chain,
 * where PostgreSQL writes every row — the slots fill with ranges fetched
 * ahead and waiting their turn: on the dense bench, sixteen ranges of ~9,000
 * rows, most of the process's memory (issue 40.5). No more than about three
 * commit batches' worth is of use at once — one committing, the next
 * prepared on the commit thread, a third forming — so a range starts its
 * fetch only while the rows held are under the bound. A sparse chain's
 * ranges hold a few hundred rows and never meet it.
 *
 * A range's rows are only known once fetched, so a range entering counts
 * what ranges have held on average until then (`firstEstimate`, the most a
 * range may hold, before any has): the ranges fetching at once do not all
 * pass on an empty count — at the start of a dense backfill, all sixteen
 * did, and made its peak. Once its blocks are in, the rows its candidates
 * make replace that estimate (`expect`: seconds before its receipts and
 * rows, on a dense chain), and its own count replaces both once it has its
 * rows (`hold`). Only the rows held count toward the average.
 *
 * `large` is told each time the rows ranges have fetched or expect (entry
 * estimates left out: every range enters at `firstEstimate`, a sparse
 * chain's too) pass `large.rows` from below: what the backfill is about to
 * hold, known seconds before a garbage collection could show it (the daemon
 * bounds its heap's growth from then, bin/heap-growth.ts). A dense range's
 * expected rows count from its blocks, so the signal comes before any range
 * holds its rows; a collection that leaves the heap just under the mark
 * meanwhile let it grow unbounded (one dense bench run in six, bench/LOG.md).
 */
export type RowsTicket = {
  /** The rows the range's candidates make, known from its blocks: they replace the estimate it entered with (or last expected). */
  expect(rows: number): void
  /** The range's rows are known (told once): they replace the estimate it entered with, or expected. */
  hold(rows: number): void
  /** The range's rows are committed, or dropped: its count leaves (once, however often called). */
  leave(): void
}

/** Told when the rows fetched and held pass `rows` (again after they fell under it). */
export type LargeBacklog = { rows: number; reached: () => void }

export function createRowsInFlight(limit: number, firstEstimate = 0, large?: LargeBacklog) {
  let held = 0
  /** Rows of the ranges that have fetched or expect theirs, without the entry estimates of those still fetching. */
  let fetched = 0
  let ranges = 0
  let rowsSeen = 0
  const waiting: Array<(ticket: RowsTicket) => void> = []

  const estimate = () => (ranges === 0 ? firstEstimate : Math.round(rowsSeen / ranges))

  /** Lets waiting ranges in while there is room, each counted in as it passes (not once it runs). */
  function admit() {
    while (waiting.length > 0 && held < limit) waiting.shift()!(ticket())
  }

  function countFetched(rows: number) {
    const before = fetched
    fetched += rows
    if (large && before < large.rows && fetched >= large.rows) large.reached()
  }

  function ticket(): RowsTicket {
    let counted = estimate()
    /** What this range adds to `fetched`: 0 until it expects or holds rows. */
    let countedFetched = 0
    let left = false
    let hasRows = false
    held += counted
    /** The range counts `rows`, held and fetched, from now on. */
    function count(rows: number) {
      held += rows - counted
      counted = rows
      countFetched(rows - countedFetched)
      countedFetched = rows
      admit()
    }
    return {
      expect(rows) {
        if (left || hasRows) return
        count(rows)
      },
      hold(rows) {
        if (left || hasRows) return
        hasRows = true
        ranges++
        rowsSeen += rows
        count(rows)
      },
      leave() {
        if (left) return
        left = true
        held -= counted
        countFetched(-countedFetched)
        admit()
      },
    }
  }

  return {
    /** Waits for room (the rows held under the limit), then counts the range in. */
    enter(): Promise<RowsTicket> {
      if (held < limit && waiting.length === 0) return Promise.resolve(ticket())
      return new Promise((resolve) => waiting.push(resolve))
    },
    /** Ranges waiting for room: they are not on their way to the commit (the batcher does not wait for them). */
    get waiting() {
      return waiting.length
    },
    /** Rows held now (for tests and metrics). */
    get held() {
      return held
    },
  }
}

export type RowsInFlight = ReturnType<typeof createRowsInFlight>
