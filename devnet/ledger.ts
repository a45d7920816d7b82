import type { Hex } from 'viem'

/**
 * Ground truth: what an index must hold for some traffic, worked out from
 * what was sent (never by decoding it with the indexer's code). One
 * vocabulary for the devnet's traffic (mined on anvil, read back from
 * receipts and UserOperationEvents; tests, the fault suite and the devnet's
 * audit compare the index with it) and the bench's generated chains (the
 * benches fail when an index differs from it).
 */
export type ExpectedAttribution = {
  chainId: number
  blockNumber: number
  txHash: Hex
  kind: 'transaction' | 'userOperation'
  /** -1 for the transaction itself; else the op's position in the bundle's ops array. */
  userOpIndex: number
  /** For a userOperation: the hash its UserOperationEvent carries. */
  userOpHash?: Hex
  /** One row per distinct code per transaction or operation. */
  code: string
  /** Receipt status of a transaction; `success` of the UserOperationEvent of an operation. */
  status: 'success' | 'reverted'
  schemaId: 0 | 1 | 2
  /** EIP-2028 gas of the suffix bytes (16 per non-zero, 4 per zero byte). */
  suffixGas: number
}

/** Marker present, suffix unreadable: on the transaction (`userOpIndex` -1) or in an operation's callData. */
export type MalformedSuffix = { txHash: Hex; userOpIndex: number }

/** What an index must hold: its attribution rows and malformed suffixes. The bench's chains carry this much. */
export type ExpectedIndex = {
  attributions: ExpectedAttribution[]
  malformed: MalformedSuffix[]
}

/** The devnet traffic's ground truth: what the index must hold, and which of the sent transactions attribute nothing. */
export type GroundTruth = ExpectedIndex & {
  /**
   * Generated transactions that attribute nothing: no suffix on the
   * transaction, and for a bundle no suffix on any of its operations.
   * Setup transactions (deployments, funding) are not listed.
   */
  unattributedTxHashes: Hex[]
}

/**
 * What the analytics API should report per code: `transactions` and
 * `userOperations` count successful ones, `reverted` counts failed ones of
 * both kinds, `suffixGas` sums over every row of the code.
 */
export type CodeTotals = { transactions: number; userOperations: number; reverted: number; suffixGas: number }

export function emptyTruth(): GroundTruth {
  return { attributions: [], malformed: [], unattributedTxHashes: [] }
}

export function appendTruth(into: GroundTruth, from: GroundTruth): void {
  into.attributions.push(...from.attributions)
  into.malformed.push(...from.malformed)
  into.unattributedTxHashes.push(...from.unattributedTxHashes)
}

export function copyTruth(truth: GroundTruth): GroundTruth {
  return {
    attributions: truth.attributions.map((row) => ({ ...row })),
    malformed: truth.malformed.map((row) => ({ ...row })),
    unattributedTxHashes: [...truth.unattributedTxHashes],
  }
}

/** Counts one row into its code's totals (a generator adds rows as it makes them, without keeping them). */
export function addToTotals(totals: Record<string, CodeTotals>, row: Pick<ExpectedAttribution, 'code' | 'kind' | 'status' | 'suffixGas'>): void {
  const entry = (totals[row.code] ??= { transactions: 0, userOperations: 0, reverted: 0, suffixGas: 0 })
  if (row.status === 'reverted') entry.reverted += 1
  else if (row.kind === 'transaction') entry.transactions += 1
  else entry.userOperations += 1
  entry.suffixGas += row.suffixGas
}

export function totalsByCode(truth: Pick<ExpectedIndex, 'attributions'>): Record<string, CodeTotals> {
  const totals: Record<string, CodeTotals> = {}
  for (const row of truth.attributions) addToTotals(totals, row)
  return totals
}

/** Running counts for the devnet's log lines, kept incrementally so a long run never rescans its ledger. */
export type TruthSummary = {
  attributedTransactions: number
  attributedUserOperations: number
  reverted: number
  malformed: number
  unattributed: number
  distinctCodes: number
}

export function createTruthSummary() {
  const codes = new Set<string>()
  const summary: TruthSummary = { attributedTransactions: 0, attributedUserOperations: 0, reverted: 0, malformed: 0, unattributed: 0, distinctCodes: 0 }
  return {
    summary,
    add(truth: GroundTruth) {
      const seen = new Map<string, ExpectedAttribution>()
      for (const row of truth.attributions) {
        seen.set(`${row.txHash}:${row.userOpIndex}`, row)
        codes.add(row.code)
      }
      for (const row of seen.values()) {
        if (row.kind === 'transaction') summary.attributedTransactions += 1
        else summary.attributedUserOperations += 1
        if (row.status === 'reverted') summary.reverted += 1
      }
      summary.malformed += truth.malformed.length
      summary.unattributed += truth.unattributedTxHashes.length
      summary.distinctCodes = codes.size
    },
  }
}
