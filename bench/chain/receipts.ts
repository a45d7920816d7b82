import { addLogToBloom, bloomHex, createBloom } from './bloom.js'
import { hexQuantity, quoted } from './json-fields.js'
import type { LogSpec } from './user-operations.js'

/** Receipts and their logs as a geth-family node prints them for `eth_getTransactionReceipt` and `eth_getBlockReceipts`. */

/** Gas a transaction used, derived from its hash so a receipt follows from the transaction alone. */
export function gasUsedOf(hash: string, gasLimit: number): number {
  if (gasLimit <= 21_000) return gasLimit
  return 21_000 + (Number.parseInt(hash.slice(2, 10), 16) % (gasLimit - 21_000))
}

export type ReceiptFields = {
  blockHash: string
  blockNumber: number
  transactionHash: string
  transactionIndex: number
  from: string
  to: string | null
  type: number
  cumulativeGasUsed: number
  gasUsed: number
  effectiveGasPrice: number
  status: 0 | 1
  logs: LogSpec[]
  /** logIndex of the first log of this receipt within its block. */
  firstLogIndex: number
}

export function logJson(log: LogSpec, receipt: ReceiptFields, logIndex: number): string {
  return (
    `{"address":"${log.address}","topics":[${log.topics.map(quoted).join(',')}],"data":"${log.data}",` +
    `"blockNumber":"${hexQuantity(receipt.blockNumber)}","transactionHash":"${receipt.transactionHash}",` +
    `"transactionIndex":"${hexQuantity(receipt.transactionIndex)}","blockHash":"${receipt.blockHash}",` +
    `"logIndex":"${hexQuantity(logIndex)}","removed":false}`
  )
}

const EMPTY_BLOOM = createBloom()
const EMPTY_BLOOM_HEX = bloomHex(EMPTY_BLOOM)

export function receiptJson(receipt: ReceiptFields): { json: string; bloom: Uint8Array } {
  // most receipts have no log: their (all-zero) bloom is the same string every time
  let bloom = EMPTY_BLOOM
  let bloomText = EMPTY_BLOOM_HEX
  if (receipt.logs.length > 0) {
    bloom = createBloom()
    for (const log of receipt.logs) addLogToBloom(bloom, log)
    bloomText = bloomHex(bloom)
  }
  const contractAddress = receipt.to === null ? `"0x${receipt.transactionHash.slice(-40)}"` : 'null'
  const json =
    `{"blockHash":"${receipt.blockHash}","blockNumber":"${hexQuantity(receipt.blockNumber)}",` +
    `"contractAddress":${contractAddress},"cumulativeGasUsed":"${hexQuantity(receipt.cumulativeGasUsed)}",` +
    `"effectiveGasPrice":"${hexQuantity(receipt.effectiveGasPrice)}","from":"${receipt.from}",` +
    `"gasUsed":"${hexQuantity(receipt.gasUsed)}",` +
    `"logs":[${receipt.logs.map((log, i) => logJson(log, receipt, receipt.firstLogIndex + i)).join(',')}],` +
    `"logsBloom":"${bloomText}","status":"${hexQuantity(receipt.status)}","to":${quoted(receipt.to)},` +
    `"transactionHash":"${receipt.transactionHash}","transactionIndex":"${hexQuantity(receipt.transactionIndex)}",` +
    `"type":"${hexQuantity(receipt.type)}"}`
  return { json, bloom }
}
