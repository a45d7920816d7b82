import type { Database } from '../db/client.js'
import { commitFinalRanges } from './bulk-commit.js'
import { commitRanges, type CommitOutcome, type RangeResult } from './commit.js'
import { createEveryChainMemory } from './every-chain.js'
import { createFinalMembers } from './final-members.js'
import { allRows } from './row-pieces.js'
import type { BatchSettled } from './together-or-each.js'

/**
 * The indexer's write side of the store, as one object per database: it owns
 * what the commit remembers between statements (the every-chain scope's
 * state, every-chain.ts; the members it made final, final-members.ts) instead of a module-level map keyed by the database
 * client. Create one per process role that commits (createRangeWorker does),
 * and hand it what commits.
 */
export type IndexStore = {
  /** Commits ranges exactly once, in one transaction: by the bulk path when every one is final (bulk-commit.ts), else the tip path's statement (commit.ts). */
  commitRanges(results: readonly RangeResult[]): Promise<CommitOutcome[]>
  commitRange(result: RangeResult): Promise<CommitOutcome>
  /**
   * commitTogetherOrEach (together-or-each.ts) run where the commits run: a store that holds what it commits
   * apart from its caller (the commit thread, threaded-store.ts) retries a batch range by range itself, so its
   * caller need not keep the batch for that. Without it, callers run commitTogetherOrEach over commitRanges.
   */
  commitTogetherOrEach?(results: readonly RangeResult[]): Promise<BatchSettled>
  /**
   * Hands a result's rows to where the commits run as soon as it is ready, and gives back the result without them
   * (their ticket in `heldRows`), to be committed later like any other. A store on a thread of its own
   * (threaded-store.ts) has it: rows waiting for their statement then wait there, and the caller's thread lets
   * them go young, before its collector copies them again and again while they wait.
   */
  hold?(result: RangeResult): RangeResult
}

/** A result whose rows came as pieces (row-pieces.ts) with its rows as objects: the tip path's statement takes them all at once. */
function withRowsRead(result: RangeResult): RangeResult {
  if (!result.rowPieces) return result
  const { rowPieces, ...rest } = result
  return { ...rest, rows: [...rest.rows, ...allRows(rowPieces)] }
}

export function createIndexStore({ db }: { db: Database }): IndexStore {
  const everyChain = createEveryChainMemory()
  const finalMembers = createFinalMembers()
  const commitEither = (results: readonly RangeResult[]) =>
    results.every((result) => result.final) ? commitFinalRanges(db, results, everyChain, finalMembers) : commitRanges(db, results.map(withRowsRead), everyChain)
  return {
    commitRanges: (results) => commitEither(results),
    commitRange: async (result) => (await commitEither([result]))[0]!,
  }
}
