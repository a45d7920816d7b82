import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs'
import type { Address, Hex } from 'viem'
import { addToTotals, type CodeTotals, type ExpectedAttribution, type ExpectedIndex, type MalformedSuffix } from '../../devnet/ledger.js'

/**
 * The ground truth of a generated chain, in the devnet's vocabulary
 * (devnet/ledger.ts): the rows an index must hold and the malformed
 * suffixes (`ExpectedIndex`), worked out while generating from what was put
 * into the chain, never by decoding it. The rows of a million-transaction
 * chain are hundreds of megabytes, so they are streamed to disk as they are
 * made (attributions.ndjson) and read only by who needs them; what a bench
 * checks an index against — per code totals, counts — is kept beside them
 * (truth.json, `ChainTruth`).
 */
export type ChainTruth = {
  chainId: number
  firstBlock: number
  lastBlock: number
  transactions: number
  bundles: number
  userOperations: number
  /** Attributed transactions and UserOperations, each counted once whatever its number of codes. */
  attributedTransactions: { success: number; reverted: number }
  attributedUserOperations: { success: number; reverted: number }
  /** Rows `attributions` should hold: one per (transaction or operation, code). */
  attributionRows: number
  malformed: number
  /** Per code, as the analytics API reports it (devnet/ledger.ts `totalsByCode` over the rows). */
  totals: Record<string, CodeTotals>
  /** Wallets whose builder codes (attempt 0) appear in suffixes, so a bench can register them first. */
  registeredWallets: Array<{ wallet: Address; code: string }>
}

/** One attributed transaction or UserOperation as the generator makes it: a row per distinct code of its suffix. */
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

const ROWS_FILE = 'attributions.ndjson'
const MALFORMED_FILE = 'malformed.json'
const TRUTH_FILE = 'truth.json'

/** Records a chain's ground truth into `dir` while it is generated; `finish()` writes what is kept in memory. */
export function createTruthWriter(options: { dir: string; chainId: number; lastBlock: number; registeredWallets: ChainTruth['registeredWallets'] }) {
  const truth: ChainTruth = {
    chainId: options.chainId,
    firstBlock: 0,
    lastBlock: options.lastBlock,
    transactions: 0,
    bundles: 0,
    userOperations: 0,
    attributedTransactions: { success: 0, reverted: 0 },
    attributedUserOperations: { success: 0, reverted: 0 },
    attributionRows: 0,
    malformed: 0,
    totals: {},
    registeredWallets: options.registeredWallets,
  }
  const malformed: MalformedSuffix[] = []
  const rows = openSync(`${options.dir}/${ROWS_FILE}`, 'w')
  return {
    truth,
    recordUnit(unit: AttributedUnit): void {
      const byKind = unit.kind === 'transaction' ? truth.attributedTransactions : truth.attributedUserOperations
      byKind[unit.status]++
      const lines = unit.codes.map((code) => {
        const row: ExpectedAttribution = {
          chainId: truth.chainId,
          blockNumber: unit.block,
          txHash: unit.txHash as Hex,
          kind: unit.kind,
          userOpIndex: unit.userOpIndex,
          ...(unit.userOpHash && { userOpHash: unit.userOpHash as Hex }),
          code,
          status: unit.status,
          schemaId: unit.schemaId,
          suffixGas: unit.suffixGas,
        }
        addToTotals(truth.totals, row)
        return `${JSON.stringify(row)}\n`
      })
      truth.attributionRows += lines.length
      writeSync(rows, lines.join(''))
    },
    recordMalformed(txHash: string): void {
      truth.malformed++
      malformed.push({ txHash: txHash as Hex, userOpIndex: -1 })
    },
    finish(): ChainTruth {
      closeSync(rows)
      writeFileSync(`${options.dir}/${MALFORMED_FILE}`, JSON.stringify(malformed))
      writeFileSync(`${options.dir}/${TRUTH_FILE}`, JSON.stringify(truth))
      return truth
    },
  }
}

export function readChainTruth(dir: string): ChainTruth {
  return JSON.parse(readFileSync(`${dir}/${TRUTH_FILE}`, 'utf8')) as ChainTruth
}

/** Every row and malformed suffix of the chain: large for a big chain, read only by who compares rows. */
export function readExpectedIndex(dir: string): ExpectedIndex {
  const text = readFileSync(`${dir}/${ROWS_FILE}`, 'utf8')
  const attributions: ExpectedAttribution[] = []
  for (const line of text.split('\n')) if (line) attributions.push(JSON.parse(line) as ExpectedAttribution)
  return { attributions, malformed: JSON.parse(readFileSync(`${dir}/${MALFORMED_FILE}`, 'utf8')) as MalformedSuffix[] }
}
