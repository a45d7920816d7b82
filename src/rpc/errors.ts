/** Errors of the indexer's RPC access; the range job and the follower retry all of them. */

export class BlockNotFoundError extends Error {
  override name = 'BlockNotFoundError'
  constructor(readonly blockNumber: number) {
    super(`block ${blockNumber} is not known to the node yet`)
  }
}

export class ReceiptNotFoundError extends Error {
  override name = 'ReceiptNotFoundError'
  constructor(readonly txHash: string) {
    super(`receipt of ${txHash} is not available from the node`)
  }
}

/**
 * The node answered another block or receipt than the one asked for (a
 * broken node, or a proxy that pairs batch answers with the wrong ids).
 * Taken as given, a block's hash would be pinned to the wrong height (a
 * false reorg) and a receipt's status credited to another transaction.
 */
export class MismatchedAnswerError extends Error {
  override name = 'MismatchedAnswerError'
}

/**
 * A block's receipts (or a candidate's receipt) came from another block than
 * the one fetched: the chain reorganised between the two calls, or the
 * endpoint is on another branch. Never mixed into the range: the range is
 * asked again (and the follower settles which branch is right).
 */
export class ReceiptsOfAnotherBlockError extends Error {
  override name = 'ReceiptsOfAnotherBlockError'
  constructor(blockNumber: number, expected: string, got: string) {
    super(`receipts of block ${blockNumber} belong to block hash ${got}, but the block fetched is ${expected}`)
  }
}
