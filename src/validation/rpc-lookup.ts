import { decodeEventLog, hexToNumber, numberToHex, type Address, type Hex } from 'viem'
import { attributionsOf, detectCandidate, needsReceipt } from '../attribution/records.js'
import type { RawLog, RawReceipt, RawTransaction } from '../rpc/objects.js'
import { entryPointSet, USER_OPERATION_EVENT_TOPIC, userOperationEventAbi } from '../attribution/userops.js'
import { HashNotFoundError, isJsonRpcRefusal, RpcUnavailableError, toRpcFailure } from './errors.js'
import type { ValidationChain } from './chains.js'
import type { Finding, HashType } from './result.js'


/** Nodes that refuse even a one-block log query are not usable for this at all. */
const MIN_LOG_RANGE = 1

/**
 * eth_getLogs queries one UserOperation search may send, refused ones
 * included. With the head and the bundle's transaction and receipt, a lookup
 * costs the node at most MAX_NODE_CALLS_PER_LOOKUP calls, whatever range
 * limit the node has: past this many queries the search stops, and its 404
 * says how far back it looked.
 */
export const MAX_LOG_QUERIES = 8
export const MAX_NODE_CALLS_PER_LOOKUP = 1 + MAX_LOG_QUERIES + 2

type RawLogEntry = RawLog & { transactionHash: Hex | null; blockNumber: Hex | null; blockHash: Hex | null }

type Lookup = { chain: ValidationChain; hash: Hex }

async function getTransaction(chain: ValidationChain, hash: Hex): Promise<RawTransaction | null> {
  return chain.request<RawTransaction | null>('eth_getTransactionByHash', [hash])
}

async function getReceipt(chain: ValidationChain, hash: Hex): Promise<RawReceipt | null> {
  return chain.receipt(hash)
}

/** The mined transaction and its receipt, or HashNotFoundError (unknown or still pending). */
async function minedTransaction(chain: ValidationChain, hash: Hex, what: string) {
  const [tx, receipt] = await Promise.all([getTransaction(chain, hash), getReceipt(chain, hash)])
  if (!tx) throw new HashNotFoundError(`${what} ${hash} is not known to chain ${chain.chainId}`)
  if (!tx.blockNumber || !tx.blockHash || !receipt) {
    throw new HashNotFoundError(`${what} ${hash} is pending on chain ${chain.chainId}: not in a block yet`)
  }
  return { tx, receipt, block: { number: hexToNumber(tx.blockNumber), hash: tx.blockHash, timestamp: 0 } }
}

/**
 * Runs the attribution path the indexer runs on a block (detect → decode →
 * join the receipt) on this one transaction. The block timestamp only feeds
 * the indexer's day buckets, which validation does not report.
 */
function recordsOf(tx: RawTransaction, receipt: RawReceipt, block: { number: number; hash: Hex; timestamp: number }, entryPoints: readonly Address[]) {
  const candidate = detectCandidate(tx, entryPointSet(entryPoints))
  const records = candidate && needsReceipt(candidate) ? attributionsOf(candidate, receipt, block) : []
  return { candidate, records }
}

async function transactionFinding({ chain, hash }: Lookup): Promise<Finding> {
  const { tx, receipt, block } = await minedTransaction(chain, hash, 'transaction')
  const { candidate, records } = recordsOf(tx, receipt, block, chain.entryPoints)
  const own = records.find((record) => record.kind === 'transaction')
  return {
    source: 'rpc',
    type: 'transaction',
    hash,
    chainId: chain.chainId,
    transactionHash: tx.hash,
    blockNumber: block.number,
    status: receipt.status === '0x1' ? 'success' : 'reverted',
    decoded: own?.attribution ?? (candidate?.own?.kind === 'malformed' ? candidate.own : undefined),
  }
}

async function getLogs(chain: ValidationChain, hash: Hex, fromBlock: number, toBlock: number): Promise<RawLogEntry[]> {
  return chain.request<RawLogEntry[]>('eth_getLogs', [
    { address: [...chain.entryPoints], topics: [USER_OPERATION_EVENT_TOPIC, hash], fromBlock: numberToHex(fromBlock), toBlock: numberToHex(toBlock) },
  ])
}

/**
 * Searches the last `window` blocks, newest first, for the op's
 * UserOperationEvent. A node that refuses a range (providers cap
 * eth_getLogs) gets half the range, and the size it accepted is kept for
 * the next search.
 */
async function findUserOperationEvent({ chain, hash }: Lookup, window: number): Promise<RawLogEntry> {
  const head = hexToNumber(await chain.request<Hex>('eth_blockNumber'))
  const lowest = Math.max(0, head - window + 1)
  let toBlock = head
  for (let queries = 0; toBlock >= lowest && queries < MAX_LOG_QUERIES; queries++) {
    const fromBlock = Math.max(lowest, toBlock - chain.logRange + 1)
    let logs: RawLogEntry[]
    try {
      logs = await getLogs(chain, hash, fromBlock, toBlock)
    } catch (error) {
      if (!isJsonRpcRefusal(error) || toBlock - fromBlock + 1 <= MIN_LOG_RANGE) throw error
      chain.logRange = Math.max(MIN_LOG_RANGE, Math.floor((toBlock - fromBlock + 1) / 2))
      continue
    }
    const found = logs.findLast((log) => log.transactionHash && log.topics[1]?.toLowerCase() === hash)
    if (found) return found
    toBlock = fromBlock - 1
  }
  const searchedFrom = toBlock + 1
  const why = searchedFrom > lowest ? `after ${MAX_LOG_QUERIES} log queries (the node's log range is now ${chain.logRange} blocks)` : `(VALIDATE_LOG_WINDOW=${window})`
  throw new HashNotFoundError(
    `UserOperation ${hash} not found on chain ${chain.chainId}: no UserOperationEvent in the last ${head - searchedFrom + 1} blocks ` +
      `(${searchedFrom}…${head}); the search gave up there ${why}`,
  )
}

async function userOperationFinding(lookup: Lookup, window: number): Promise<Finding> {
  const { chain, hash } = lookup
  const log = await findUserOperationEvent(lookup, window)
  const event = decodeEventLog({ abi: userOperationEventAbi, topics: log.topics as [Hex, ...Hex[]], data: log.data })
  const { tx, receipt, block } = await minedTransaction(chain, log.transactionHash!, 'bundle transaction').catch((error) => {
    // the node just served the log, so failing to serve its transaction is the node's fault
    throw error instanceof HashNotFoundError ? new RpcUnavailableError(chain.chainId, error) : error
  })
  const { candidate, records } = recordsOf(tx, receipt, block, chain.entryPoints)
  const record = records.find((entry) => entry.kind === 'userOperation' && entry.userOpHash?.toLowerCase() === hash)
  const sameOp = (op: { sender: string; nonce: bigint }) =>
    op.sender.toLowerCase() === event.args.sender.toLowerCase() && op.nonce === event.args.nonce
  const malformed = candidate?.malformedOps.find(({ op }) => sameOp(op))?.result
  return {
    source: 'rpc',
    type: 'userOperation',
    hash,
    chainId: chain.chainId,
    transactionHash: tx.hash,
    userOpHash: event.args.userOpHash,
    blockNumber: block.number,
    status: event.args.success ? 'success' : 'reverted',
    decoded: record?.attribution ?? malformed,
  }
}

/**
 * Asks the chain about a hash: a transaction by its receipt, a
 * UserOperation through its UserOperationEvent (no bundler needed) and the
 * bundle that carried it. Throws HashNotFoundError, RpcTimeoutError or
 * RpcUnavailableError.
 */
export async function findOnChain(chain: ValidationChain, query: { type: HashType; hash: Hex; logWindow: number }): Promise<Finding> {
  const lookup = { chain, hash: query.hash }
  try {
    return query.type === 'transaction' ? await transactionFinding(lookup) : await userOperationFinding(lookup, query.logWindow)
  } catch (error) {
    throw toRpcFailure(error, chain.chainId)
  }
}
