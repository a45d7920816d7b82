import type { Address } from 'viem'
import type { ChainParams } from './generate.js'

/**
 * The ground truth of a generated chain: what an indexer must count, worked
 * out while generating from what was put into the chain, never by decoding
 * it (the indexer's decoder must not check itself).
 */

export type Counts = { success: number; reverted: number; suffixGas: number; suffixGasSuccess: number }
export type CodeTotals = { transaction: Counts; userOperation: Counts }

/** One attributed transaction or UserOperation, as the indexer should record it. */
export type AttributedUnit = {
  kind: 'transaction' | 'userOperation'
  txHash: string
  /** Position of the operation in its bundle, -1 for a transaction. */
  userOpIndex: number
  userOpHash?: string
  block: number
  status: 'success' | 'reverted'
  schemaId: 0 | 1 | 2
  codes: string[]
  suffixGas: number
}

export type GroundTruth = {
  chainId: number
  firstBlock: number
  lastBlock: number
  transactions: number
  bundles: number
  userOperations: number
  malformed: number
  attributedTransactions: { success: number; reverted: number }
  attributedUserOperations: { success: number; reverted: number }
  /** Rows `attributions` should hold: one per (transaction or operation, code). */
  attributionRows: number
  totals: Record<string, CodeTotals>
  units: AttributedUnit[]
  /** Wallets whose builder codes (attempt 0) appear in suffixes, so a bench can register them first. */
  registeredWallets: Array<{ wallet: Address; code: string }>
}

function emptyCounts(): Counts {
  return { success: 0, reverted: 0, suffixGas: 0, suffixGasSuccess: 0 }
}

export function createTruth(params: ChainParams, registeredWallets: GroundTruth['registeredWallets']): GroundTruth {
  return {
    chainId: params.chainId,
    firstBlock: 0,
    lastBlock: params.blocks,
    transactions: 0,
    bundles: 0,
    userOperations: 0,
    malformed: 0,
    attributedTransactions: { success: 0, reverted: 0 },
    attributedUserOperations: { success: 0, reverted: 0 },
    attributionRows: 0,
    totals: {},
    units: [],
    registeredWallets,
  }
}

export function recordUnit(truth: GroundTruth, unit: AttributedUnit): void {
  truth.units.push(unit)
  const byKind = unit.kind === 'transaction' ? truth.attributedTransactions : truth.attributedUserOperations
  byKind[unit.status === 'success' ? 'success' : 'reverted']++
  for (const code of unit.codes) {
    truth.totals[code] ??= { transaction: emptyCounts(), userOperation: emptyCounts() }
    const counts = truth.totals[code]![unit.kind]
    if (unit.status === 'success') {
      counts.success++
      counts.suffixGasSuccess += unit.suffixGas
    } else {
      counts.reverted++
    }
    counts.suffixGas += unit.suffixGas
    truth.attributionRows++
  }
}
