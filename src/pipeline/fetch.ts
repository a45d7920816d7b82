import {
  attributionsOf,
  candidateFilter,
  detectCandidate,
  malformedOf,
  needsReceipt,
  receiptLogsNeeded,
  type AttributionRecord,
  type Candidate,
  type MalformedRecord,
} from '../attribution/records.js'
import type { Hex } from 'viem'
import type { Rpc, ScannedBlock } from '../rpc/client.js'
import type { RawTransaction } from '../rpc/objects.js'
import type { IndexedBlock } from '../store/commit.js'
import type { RangeJob } from '../store/ranges.js'

/** The node served blocks of another branch than the one the range was cut from. */
export class BranchMismatchError extends Error {
  override name = 'BranchMismatchError'
  constructor(job: RangeJob, detail: string) {
    super(`range ${job.fromBlock}-${job.toBlock} of chain ${job.chainId}: ${detail}`)
  }
}

/**
 * The range's candidates would make more rows than a range may hold
 * (MAX_RANGE_ROWS): it is to be replaced by `pieces`, contiguous ranges of
 * the same branch, each within the budget unless it is a single block; a
 * range of one block has itself as its only piece.
 */
export class RangeTooDenseError extends Error {
  override name = 'RangeTooDenseError'
  constructor(
    job: RangeJob,
    readonly rows: number,
    readonly pieces: RangeJob[],
  ) {
    super(`range ${job.fromBlock}-${job.toBlock} of chain ${job.chainId}: ${rows} rows, cut into ${pieces.length} ranges`)
  }
}

export type FetchedRange = {
  blocks: IndexedBlock[]
  txCount: number
  attributions: AttributionRecord[]
  malformed: MalformedRecord[]
}

/**
 * Checks that the fetched blocks are exactly the branch the follower pinned:
 * the first block's parent, every link, and the last block's hash. Hash
 * links are what make "the same range" mean the same transactions.
 */
export function verifyBranch(blocks: readonly Pick<ScannedBlock, 'number' | 'hash' | 'parentHash'>[], job: RangeJob): void {
  let expectedParent = job.parentHash.toLowerCase()
  for (const [i, block] of blocks.entries()) {
    const { number } = block
    if (number !== job.fromBlock + i) throw new BranchMismatchError(job, `expected block ${job.fromBlock + i}, got ${number}`)
    if (block.parentHash.toLowerCase() !== expectedParent) {
      throw new BranchMismatchError(job, `block ${number} has parent ${block.parentHash}, expected ${expectedParent}`)
    }
    expectedParent = block.hash.toLowerCase()
  }
  if (expectedParent !== job.toHash.toLowerCase()) {
    throw new BranchMismatchError(job, `block ${job.toBlock} is ${expectedParent}, expected ${job.toHash}`)
  }
}

function blockContext(block: ScannedBlock<Candidate>): IndexedBlock {
  return { number: block.number, hash: block.hash, parentHash: block.parentHash, timestamp: block.timestamp, txCount: block.txCount }
}

/** The rows a candidate brings to its range's commit: one per code of each attributed suffix, one per malformed one. */
export function rowsOf(candidate: Candidate): number {
  let rows = candidate.malformedOps.length
  if (candidate.own) rows += candidate.own.kind === 'attributed' ? candidate.own.codes.length : 1
  for (const { result } of candidate.attributedOps) rows += result.codes.length
  return rows
}

/**
 * Contiguous pieces of the fetched range, each holding at most `maxRows`
 * rows unless it is one block (a block cannot be split), pinned to the
 * hashes just fetched: each piece is checked against its branch again when
 * it is indexed, so a reorg in between is a mismatch like any other.
 */
export function piecesOf(job: RangeJob, blocks: readonly Pick<ScannedBlock, 'number' | 'hash'>[], rowsByBlock: ReadonlyMap<number, number>, maxRows: number): RangeJob[] {
  const pieces: RangeJob[] = []
  let parentHash = job.parentHash
  let start = 0
  let rows = 0
  blocks.forEach((block, i) => {
    const next = blocks[i + 1]
    rows += rowsByBlock.get(block.number) ?? 0
    const nextRows = next ? (rowsByBlock.get(next.number) ?? 0) : 0
    if (next && rows + nextRows <= maxRows) return
    // the last piece ends where the range did, on the job's own spelling of its hash (nodes differ in the case of hex)
    const toHash = next ? (block.hash as Hex) : job.toHash
    pieces.push({ chainId: job.chainId, fromBlock: blocks[start]!.number, toBlock: block.number, parentHash, toHash })
    parentHash = block.hash as Hex
    start = i + 1
    rows = 0
  })
  return pieces
}

/**
 * Fetch-and-detect stage: full blocks in batched calls, scanned so that only
 * transactions ending with the marker or calling an EntryPoint are parsed,
 * then receipts only for the few that carry a suffix or an attributed
 * UserOperation, each holding only the logs its records are built from.
 *
 * Anyone can fill blocks with suffixes of 32 codes: on a chain of cheap gas
 * a range of 50 such blocks is millions of rows, more than a worker's
 * memory or one statement holds, and it would fail on every retry. So the
 * fetch stops holding candidates once they pass `maxRows` rows, still counts
 * the rest, and throws RangeTooDenseError naming the pieces to index
 * instead: contiguous ranges within the budget, or the range itself when it
 * is one block (then fetched again with no budget, one at a time: worker.ts).
 *
 * The rows the candidates make are known once the blocks are in, before
 * their receipts: `expectRows` is told them then (the worker counts them in
 * its rows in flight, rows-in-flight.ts).
 */
export async function fetchRange(
  rpc: Rpc,
  job: RangeJob,
  entryPoints: ReadonlySet<string>,
  options: { maxRows: number; limitBlockFetches?: <T>(fetch: () => Promise<T>) => Promise<T>; expectRows?: (rows: number) => void },
): Promise<FetchedRange> {
  const { maxRows, limitBlockFetches = (fetch) => fetch() } = options
  const rowsByBlock = new Map<number, number>()
  let rows = 0
  // each candidate is detected as it is read (batches.ts): the parsed transactions are never held
  const detect = (tx: RawTransaction) => detectCandidate(tx, entryPoints)
  // and counted once its answer was read whole (a scan given up half-way is read again)
  const keep = (candidate: Candidate, blockNumber: number) => {
    const added = rowsOf(candidate)
    rows += added
    rowsByBlock.set(blockNumber, (rowsByBlock.get(blockNumber) ?? 0) + added)
    return rows > maxRows ? undefined : candidate
  }
  const scanned = await limitBlockFetches(() => rpc.blocks(job.fromBlock, job.toBlock, candidateFilter(entryPoints), detect, keep))
  verifyBranch(scanned, job)
  if (rows > maxRows) throw new RangeTooDenseError(job, rows, piecesOf(job, scanned, rowsByBlock, maxRows))
  options.expectRows?.(rows)

  const blocks: IndexedBlock[] = []
  const found: Array<{ candidate: Candidate; block: IndexedBlock }> = []
  let txCount = 0
  for (const scannedBlock of scanned) {
    const block = blockContext(scannedBlock)
    blocks.push(block)
    txCount += block.txCount
    for (const candidate of scannedBlock.candidates) found.push({ candidate, block })
  }

  const malformed = found.flatMap(({ candidate, block }) => malformedOf(candidate, block))
  const needing = found.filter(({ candidate }) => needsReceipt(candidate))
  // each receipt is checked to come from the block fetched: a reorg in between is a retry, never a mix
  const receipts = await rpc.receipts(
    needing.map(({ candidate, block }) => ({
      hash: candidate.tx.hash,
      block: { number: block.number, hash: block.hash, txCount: block.txCount },
      // of its logs, a receipt keeps only those its records are built from: anyone can emit a hundred megabytes of them
      logs: receiptLogsNeeded(candidate),
    })),
  )
  const attributions = needing.flatMap(({ candidate, block }, i) => attributionsOf(candidate, receipts[i]!, block))
  return { blocks, txCount, attributions, malformed }
}
