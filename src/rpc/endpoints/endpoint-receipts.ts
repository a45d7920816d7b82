/**
 * What one endpoint has taught about receipts, and the choice it drives:
 * for a block whose candidates need their outcome, either one
 * `eth_getTransactionReceipt` per candidate, or one `eth_getBlockReceipts`
 * for the whole block. The cheaper way depends on how many of the block's
 * transactions are candidates and on how large the answers are — both
 * measured from this endpoint's earlier answers, never assumed:
 *
 *   per transaction: n × (bytes of a candidate's receipt + a call)
 *   whole block:     T × (bytes per transaction of a block's receipts) + a call
 *
 * A call is weighed as CALL_WEIGHT measured receipt answers: for a single
 * receipt the node finds the transaction's block and (geth, reth) reads and
 * derives that block's receipts to answer one, and we frame, dispatch and
 * check one more JSON-RPC item; a block's receipts share all of that. A
 * sparse chain (2 candidates in 200) keeps single receipts; a dense one
 * (half the block and more, or a third with large bundle receipts) takes
 * the block's receipts in one call. BENCHMARKS.md has the dense chain's
 * figures both ways.
 *
 * A node without `eth_getBlockReceipts` says so once (-32601, -32600,
 * "method not found", "does not exist", "not supported"); it is remembered
 * and the endpoint gets single receipts from then on, quietly.
 */

const BLEND = 0.2
/** What one more call costs, in receipt answers (see above). */
const CALL_WEIGHT = 2
/** Until anything is measured: what a plain receipt answer weighs (replaced by the first measurement). */
const FIRST_GUESS_BYTES = 1_000

export type BlockReceiptsSupport = 'unknown' | 'supported' | 'unsupported'

const UNSUPPORTED = /-3260[01]\b|method not found|does not exist|not supported|unsupported method/i

/** Whether an error says the node has no such method (as opposed to a fault of this call). */
export function saysMethodMissing(message: string): boolean {
  return UNSUPPORTED.test(message)
}

export function createReceiptKnowledge() {
  let support: BlockReceiptsSupport = 'unknown'
  let bytesPerReceipt: number | undefined
  let bytesPerBlockTransaction: number | undefined

  const blend = (old: number | undefined, fresh: number) => (old === undefined ? fresh : old * (1 - BLEND) + fresh * BLEND)

  return {
    get support() {
      return support
    },
    set support(value: BlockReceiptsSupport) {
      support = value
    },
    /** A batch of single receipts answered: `bytes` for `calls` receipts. */
    singleReceipts(bytes: number, calls: number) {
      if (calls <= 0) return
      bytesPerReceipt = blend(bytesPerReceipt, bytes / calls)
    },
    /** A batch of block receipts answered: `bytes` for blocks holding `transactions` transactions in all. */
    blockReceipts(bytes: number, blocks: number, transactions: number) {
      if (blocks <= 0) return
      support = 'supported'
      if (transactions > 0) bytesPerBlockTransaction = blend(bytesPerBlockTransaction, bytes / transactions)
    },
    /** Whether a block of `transactions` transactions, `candidates` of them needing a receipt, is cheaper asked whole. */
    wholeBlockCheaper(candidates: number, transactions: number): boolean {
      if (support === 'unsupported' || candidates === 0) return false
      const receipt = bytesPerReceipt ?? bytesPerBlockTransaction ?? FIRST_GUESS_BYTES
      const blockTransaction = bytesPerBlockTransaction ?? receipt
      const call = CALL_WEIGHT * receipt
      return transactions * blockTransaction + call < candidates * (receipt + call)
    },
    read() {
      return { support, bytesPerReceipt, bytesPerBlockTransaction }
    },
  }
}

export type ReceiptKnowledge = ReturnType<typeof createReceiptKnowledge>
