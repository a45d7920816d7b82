import { numberToHex, type Hex } from 'viem'
import { matchesFilter, scanBlockBatch, type ScannedBlock, type TransactionFilter } from './block-scan.js'
import { BlockNotFoundError, MismatchedAnswerError, ReceiptNotFoundError } from './errors.js'
import { sameHash, type RawReceipt, type RawTransaction } from './objects.js'
import type { Transport } from './transport.js'

/**
 * The indexer's bulk calls — full blocks and receipts — over the adaptive
 * transport. Blocks are read by the scanner in block-scan.ts rather than
 * parsed: parsing every transaction is the cost this path exists to avoid.
 * An answer the scanner gives up on (an error item, a missing block, an
 * unusual layout) is parsed and read call by call, so the transport can
 * retry just the calls that failed.
 */
type FullBlock = { number: Hex; hash: Hex; parentHash: Hex; timestamp: Hex; transactions: RawTransaction[] | Hex[] }

export class RpcItemError extends Error {
  override name = 'RpcItemError'
}

/** One parsed block, checked and reduced to what the scanner would have found. */
function scannedFrom(value: unknown, number: number, filter: TransactionFilter): ScannedBlock {
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

function checkedReceipt(value: unknown, hash: Hex): RawReceipt {
  const receipt = value as RawReceipt | null
  if (!receipt) throw new ReceiptNotFoundError(hash)
  if (!sameHash(receipt.transactionHash, hash)) {
    throw new MismatchedAnswerError(`asked for the receipt of ${hash}, the node answered the receipt of ${receipt.transactionHash}`)
  }
  return receipt
}

export function createBatches(transport: Transport) {
  /** Blocks `from`..`to`, with the transactions `filter` keeps; throws BlockNotFoundError if the node lacks one. */
  function blocks(from: number, to: number, filter: TransactionFilter): Promise<ScannedBlock[]> {
    const numbers = Array.from({ length: to - from + 1 }, (_, i) => from + i)
    return transport.callMany({
      method: 'eth_getBlockByNumber',
      sizeKey: 'eth_getBlockByNumber(full)',
      params: numbers.map((number) => [numberToHex(number), true]),
      readBatch: (body, positions) => scanBlockBatch(body, positions.map((position) => numbers[position]!), filter),
      readResult: (value, position) => scannedFrom(value, numbers[position]!, filter),
    })
  }

  /** Receipts of the given transactions; throws ReceiptNotFoundError if the node lacks one. */
  function receipts(hashes: readonly Hex[]): Promise<RawReceipt[]> {
    if (hashes.length === 0) return Promise.resolve([])
    return transport.callMany({
      method: 'eth_getTransactionReceipt',
      params: hashes.map((hash) => [hash]),
      readResult: (value, position) => checkedReceipt(value, hashes[position]!),
    })
  }

  return { blocks, receipts }
}
