import type { Hex } from 'viem'
import { BlockNotFoundError, MismatchedAnswerError, ReceiptNotFoundError, ReceiptsOfAnotherBlockError } from './errors.js'
import { sameHash, type LogFilter, type RawReceipt, type RawTransaction } from './objects.js'
import { matchesFilter, type ScannedBlock, type TransactionFilter } from './scan/block-scan.js'
import { slimReceipt } from './scan/receipt-read.js'
import type { BlockReceiptsExpected } from './scan/receipts-scan.js'

/**
 * What a parsed answer of the bulk calls (batches.ts) must be before it is
 * used: the block asked, with its transaction bodies; the receipt of the
 * transaction asked, from the block it was fetched in; all of a block's
 * receipts and only them. A failed check is that call's fault (lag, a
 * reorg between two calls, a node answering another call): the transport
 * asks it again, or another endpoint. The scanners check the same when
 * they read the bytes; these are the checks of the ordinary reading.
 */
type FullBlock = { number: Hex; hash: Hex; parentHash: Hex; timestamp: Hex; transactions: RawTransaction[] | Hex[] }

export class RpcItemError extends Error {
  override name = 'RpcItemError'
}

/**
 * A transaction whose receipt is wanted, and the block it was fetched in
 * (the receipt must come from that very block); of its logs, only those
 * `logs` names are kept (none without it).
 */
export type ReceiptWanted = { hash: Hex; block: { number: number; hash: Hex; txCount: number }; logs?: LogFilter | undefined }

/** One parsed block, checked and reduced to what the scanner would have found. */
export function scannedFrom(value: unknown, number: number, filter: TransactionFilter): ScannedBlock {
  const block = value as FullBlock | null
  if (!block) throw new BlockNotFoundError(number)
  if (Number.parseInt(block.number, 16) !== number) {
    throw new MismatchedAnswerError(`asked for block ${number}, the node answered block ${Number.parseInt(block.number, 16)}`)
  }
  if (block.transactions.some((tx) => typeof tx === 'string')) throw new RpcItemError(`block ${number} came without transaction bodies`)
  const transactions = block.transactions as RawTransaction[]
  return {
    number,
    hash: block.hash,
    parentHash: block.parentHash,
    timestamp: Number.parseInt(block.timestamp, 16),
    txCount: transactions.length,
    candidates: transactions.filter((tx) => matchesFilter(tx, filter)),
  }
}

/** A receipt from the block it was wanted from: a receipt of another block hash is a reorg between the calls. */
function checkedBlockHash(receipt: RawReceipt, block: ReceiptWanted['block']): RawReceipt {
  if (receipt.blockHash && !sameHash(receipt.blockHash, block.hash)) throw new ReceiptsOfAnotherBlockError(block.number, block.hash, receipt.blockHash)
  return receipt
}

export function checkedReceipt(value: unknown, wanted: ReceiptWanted): RawReceipt {
  const receipt = value as RawReceipt | null
  if (!receipt) throw new ReceiptNotFoundError(wanted.hash)
  if (!sameHash(receipt.transactionHash, wanted.hash)) {
    throw new MismatchedAnswerError(`asked for the receipt of ${wanted.hash}, the node answered the receipt of ${receipt.transactionHash}`)
  }
  return checkedBlockHash(receipt, wanted.block)
}

/** A block's receipts, checked to be all of that very block's, by transaction hash. */
export function checkedBlockReceipts(value: unknown, block: ReceiptWanted['block']): Map<string, RawReceipt> {
  // a lagging endpoint has no receipts for a block it has not got: lag, asked elsewhere
  if (value === null || value === undefined) throw new BlockNotFoundError(block.number)
  if (!Array.isArray(value)) throw new MismatchedAnswerError(`eth_getBlockReceipts of block ${block.number} is not a list`)
  if (value.length !== block.txCount) {
    throw new MismatchedAnswerError(`block ${block.number} holds ${block.txCount} transactions, its receipts ${value.length}`)
  }
  const byHash = new Map<string, RawReceipt>()
  for (const receipt of value as RawReceipt[]) {
    // a receipt without a block hash cannot prove it belongs: better no mix than a guess
    if (!receipt?.blockHash) throw new MismatchedAnswerError(`a receipt of block ${block.number} names no block hash`)
    byHash.set(checkedBlockHash(receipt, block).transactionHash.toLowerCase(), receipt)
  }
  return byHash
}

/** Of a block's parsed receipts, the wanted ones, each reduced as the scanner reads one (logs only where asked for). */
export function keptOf(receipts: Map<string, RawReceipt>, expected: BlockReceiptsExpected): Map<string, RawReceipt> {
  const kept = new Map<string, RawReceipt>()
  for (const hash of expected.hashes) {
    const receipt = receipts.get(hash)
    if (receipt) kept.set(hash, slimReceipt(receipt, expected.logs?.get(hash)))
  }
  return kept
}

/** What a single receipt's answer must be: the transaction's, of the block it was fetched in. */
export const receiptExpected = (wanted: ReceiptWanted) => ({ hash: wanted.hash.toLowerCase(), blockHash: wanted.block.hash, logs: wanted.logs })

/** The log filters of the wanted transactions that have one, by lowercase hash. */
export function logFiltersOf(wanted: readonly ReceiptWanted[]): Map<string, LogFilter> {
  const filters = new Map<string, LogFilter>()
  for (const { hash, logs } of wanted) if (logs) filters.set(hash.toLowerCase(), logs)
  return filters
}
