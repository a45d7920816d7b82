import type { CommitOutcome, RangeResult } from './commit.js'

/** One range's end in a batch: its outcome, or the error its own commit failed with. */
export type RangeSettled = { outcome: CommitOutcome; error?: undefined } | { outcome?: undefined; error: Error }

/**
 * How a batch went: each range's end, in the batch's order, and — when the
 * batch's statement failed or found a range no longer pending — that it was
 * committed range by range instead (with the batch's error, if it failed).
 */
export type BatchSettled = { ranges: RangeSettled[]; split?: { error: Error | undefined } }

/**
 * Ranges committed in one statement, or, if that statement fails or finds
 * one of them no longer pending (nothing of the batch is then written), one
 * statement per range, one after another: one range's trouble is its own.
 *
 * Whoever runs this holds the batch until its last range is settled: the
 * daemon's commit thread does (threaded-store.ts), so the worker's main
 * thread lets go of a batch once it is handed over instead of keeping a
 * second copy of every row for a retry that the thread can run itself.
 */
export async function commitTogetherOrEach(
  commitRanges: (results: readonly RangeResult[]) => Promise<CommitOutcome[]>,
  results: readonly RangeResult[],
): Promise<BatchSettled> {
  const together = await commitRanges(results).catch((error: Error) => error)
  if (!(together instanceof Error) && together.every((outcome) => outcome.committed)) return { ranges: together.map((outcome) => ({ outcome })) }
  if (results.length === 1) return { ranges: [together instanceof Error ? { error: together } : { outcome: together[0]! }] }
  const ranges: RangeSettled[] = []
  for (const result of results) {
    ranges.push(
      await commitRanges([result]).then(
        ([outcome]) => ({ outcome: outcome! }),
        (error: Error) => ({ error }),
      ),
    )
  }
  return { ranges, split: { error: together instanceof Error ? together : undefined } }
}
