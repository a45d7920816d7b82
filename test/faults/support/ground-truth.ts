import { createPublicClient, http } from 'viem'
import type { Database } from '../../../src/db/client.js'
import { totalsByCode, type CodeTotals, type GroundTruth } from '../../../devnet/ledger.js'
import {
  malformedFromIndex,
  malformedFromTruth,
  rowsFromIndex,
  rowsFromTruth,
  totalsFromIndex,
  type IndexedRow,
} from '../../support/indexer.js'

/** How the index differs from ground truth; every number is 0 when it is exact. */
export type Comparison = {
  /** Attribution rows of the ground truth the index lacks, or per-code counts it is short of. */
  lost: number
  /** Rows the index has beyond ground truth, or per-code counts above it: double counting. */
  doubled: number
  malformedMissing: number
  malformedExtra: number
  /** Blocks between the start block and the head that no range covers, or that two ranges cover. */
  skippedBlocks: number
  doubledBlocks: number
  pendingRanges: number
  /** Transactions the ranges say they scanned vs. transactions on the node, blocks 0..head. */
  scannedTransactions: number
  chainTransactions: number
  exact: boolean
  /** The first few differences, for the failure message. */
  differences: string[]
}

const rowKey = (row: IndexedRow) => `${row.txHash}:${row.userOpIndex}:${row.code}:${row.kind}:${row.status}`

function countDifferences(expected: string[], actual: string[]) {
  const counts = new Map<string, number>()
  for (const key of expected) counts.set(key, (counts.get(key) ?? 0) + 1)
  for (const key of actual) counts.set(key, (counts.get(key) ?? 0) - 1)
  let missing = 0
  let extra = 0
  const examples: string[] = []
  for (const [key, count] of counts) {
    if (count > 0) missing += count
    if (count < 0) extra -= count
    if (count !== 0 && examples.length < 5) examples.push(`${count > 0 ? 'missing' : 'extra'} ${key}`)
  }
  return { missing, extra, examples }
}

/** Per-code counts as row units: successful + reverted, summed over codes. */
function totalsGap(expected: Record<string, CodeTotals>, actual: Record<string, CodeTotals>) {
  let short = 0
  let excess = 0
  const examples: string[] = []
  for (const code of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
    const e = expected[code] ?? { transactions: 0, userOperations: 0, reverted: 0, suffixGas: 0 }
    const a = actual[code] ?? { transactions: 0, userOperations: 0, reverted: 0, suffixGas: 0 }
    for (const field of ['transactions', 'userOperations', 'reverted'] as const) {
      const gap = a[field] - e[field]
      if (gap < 0) short -= gap
      if (gap > 0) excess += gap
    }
    if (JSON.stringify(e) !== JSON.stringify(a) && examples.length < 5) examples.push(`totals of ${code}: expected ${JSON.stringify(e)}, indexed ${JSON.stringify(a)}`)
  }
  return { short, excess, examples }
}

/** Gaps and overlaps of the ranges over [startBlock, head], and how many are not done. */
async function rangeCoverage(db: Database, chainId: number, startBlock: number, head: number) {
  const ranges = await db.$client<{ from_block: string; to_block: string; status: string; tx_count: number | null }[]>`
    select from_block, to_block, status, tx_count from ranges where chain_id = ${chainId} order by from_block`
  let skipped = 0
  let doubled = 0
  let pending = 0
  let scanned = 0
  let next = startBlock
  for (const range of ranges) {
    const from = Number(range.from_block)
    const to = Number(range.to_block)
    if (from > next) skipped += Math.min(from, head + 1) - next
    if (from < next) doubled += Math.min(next, to + 1) - from
    next = Math.max(next, to + 1)
    if (range.status !== 'done') pending++
    scanned += range.tx_count ?? 0
  }
  if (next <= head) skipped += head + 1 - next
  return { skipped, doubled, pending, scanned }
}

/** Transactions in blocks startBlock..head, as the node reports them. */
export async function chainTransactionCount(rpcUrl: string, head: number, startBlock = 0): Promise<number> {
  const client = createPublicClient({ transport: http(rpcUrl, { batch: { batchSize: 200 } }) })
  const numbers = Array.from({ length: head - startBlock + 1 }, (_, i) => BigInt(startBlock + i))
  const counts = await Promise.all(numbers.map((blockNumber) => client.getBlockTransactionCount({ blockNumber })))
  return counts.reduce((sum, count) => sum + count, 0)
}

/**
 * Compares the index of one chain with ground truth: attribution rows
 * exactly, totals per code, malformed suffixes, and the ranges' coverage of
 * every block from the start block through `head` (no block skipped, none
 * counted twice, every transaction scanned once).
 */
export async function compareWithTruth(options: {
  db: Database
  chainId: number
  truth: GroundTruth
  head: number
  chainTransactions: number
  startBlock?: number
}): Promise<Comparison> {
  const { db, chainId, truth, head } = options
  const [indexedRows, totals, malformed, coverage] = await Promise.all([
    rowsFromIndex(db, chainId),
    totalsFromIndex(db, chainId),
    malformedFromIndex(db, chainId),
    rangeCoverage(db, chainId, options.startBlock ?? 0, head),
  ])
  const rows = countDifferences(rowsFromTruth(truth).map(rowKey), indexedRows.map(rowKey))
  const counts = totalsGap(totalsByCode(truth), totals)
  const malformedDiff = countDifferences(malformedFromTruth(truth), malformed)
  const comparison: Comparison = {
    lost: Math.max(rows.missing, counts.short),
    doubled: Math.max(rows.extra, counts.excess),
    malformedMissing: malformedDiff.missing,
    malformedExtra: malformedDiff.extra,
    skippedBlocks: coverage.skipped,
    doubledBlocks: coverage.doubled,
    pendingRanges: coverage.pending,
    scannedTransactions: coverage.scanned,
    chainTransactions: options.chainTransactions,
    exact: false,
    differences: [...rows.examples, ...counts.examples, ...malformedDiff.examples],
  }
  comparison.exact =
    comparison.lost === 0 &&
    comparison.doubled === 0 &&
    comparison.malformedMissing === 0 &&
    comparison.malformedExtra === 0 &&
    comparison.skippedBlocks === 0 &&
    comparison.doubledBlocks === 0 &&
    comparison.pendingRanges === 0 &&
    comparison.scannedTransactions === comparison.chainTransactions &&
    counts.examples.length === 0
  return comparison
}
