import {
  attributionsOf,
  candidateFilter,
  detectCandidate,
  malformedOf,
  needsReceipt,
  type AttributionRecord,
  type Candidate,
  type MalformedRecord,
} from '../attribution/records.js'
import type { Rpc, ScannedBlock } from '../rpc/client.js'
import type { IndexedBlock } from '../store/commit.js'
import type { RangeJob } from '../store/ranges.js'

/** The node served blocks of another branch than the one the range was cut from. */
export class BranchMismatchError extends Error {
  override name = 'BranchMismatchError'
  constructor(job: RangeJob, detail: string) {
    super(`range ${job.fromBlock}-${job.toBlock} of chain ${job.chainId}: ${detail}`)
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

/**
 * Fetch-and-detect stage: full blocks in batched calls, scanned so that only
 * transactions ending with the marker or calling an EntryPoint are parsed,
 * then receipts only for the few that carry a suffix or an attributed
 * UserOperation.
 */
export async function fetchRange(
  rpc: Rpc,
  job: RangeJob,
  entryPoints: ReadonlySet<string>,
  limitBlockFetches: <T>(fetch: () => Promise<T>) => Promise<T> = (fetch) => fetch(),
): Promise<FetchedRange> {
  // each candidate is detected as its answer is read (batches.ts): the parsed transactions are never held
  const scanned = await limitBlockFetches(() =>
    rpc.blocks(job.fromBlock, job.toBlock, candidateFilter(entryPoints), (tx) => detectCandidate(tx, entryPoints)),
  )
  verifyBranch(scanned, job)

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
    needing.map(({ candidate, block }) => ({ hash: candidate.tx.hash, block: { number: block.number, hash: block.hash, txCount: block.txCount } })),
  )
  const attributions = needing.flatMap(({ candidate, block }, i) => attributionsOf(candidate, receipts[i]!, block))
  return { blocks, txCount, attributions, malformed }
}
