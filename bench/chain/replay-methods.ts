import type { Chain } from './files.js'

/**
 * The JSON-RPC methods the replay node serves, answered from the generated
 * chain's pre-serialized bytes wherever an indexer's hot path asks (blocks,
 * a block's receipts, a candidate's receipt by hash), and from parsed JSON
 * only for rare lookups. Blocks above the released head do not exist yet.
 */

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

export type Result = Buffer | string

/** What the methods need from the server: the head now, and a note when a block above 0 is first asked for. */
export type MethodContext = {
  head(): number
  touchBlock(number: number): void
  countBlock(full: boolean): void
}

type ParsedLog = { blockNumber: number; address: string; topics: string[]; json: string }
type Located = { block: number; index: number }

const NULL = 'null'
/** Blocks behind the head the `safe` and `finalized` tags answer: one and two 32-slot epochs. */
const SAFE_DEPTH = 32
const FINALIZED_DEPTH = 64
const quantity = (value: number) => `"0x${value.toString(16)}"`

export function createReplayMethods(chain: Chain, context: MethodContext) {
  let logs: ParsedLog[] | undefined
  let locations: Map<string, Located> | undefined

  function blockNumberOf(tag: unknown): number | undefined {
    if (typeof tag === 'number') return tag
    if (typeof tag !== 'string') throw new RpcError(-32602, 'invalid block tag')
    if (tag === 'latest' || tag === 'pending') return context.head()
    // as a proof-of-stake node answers them: safe a epoch behind the head, finalized two (issue 40.6)
    if (tag === 'safe') return Math.max(0, context.head() - SAFE_DEPTH)
    if (tag === 'finalized') return Math.max(0, context.head() - FINALIZED_DEPTH)
    if (tag === 'earliest') return 0
    if (/^0x[0-9a-fA-F]+$/.test(tag)) return Number.parseInt(tag, 16)
    throw new RpcError(-32602, `invalid block tag ${tag}`)
  }

  function released(number: number | undefined): number | undefined {
    return number !== undefined && number >= 0 && number <= context.head() ? number : undefined
  }

  function block(number: number | undefined, full: unknown): Result {
    if (number === undefined) return NULL
    context.touchBlock(number)
    context.countBlock(full === true)
    return full === true ? chain.fullBlock(number) : chain.headerBlock(number)
  }

  /** Where every transaction is: built on first need (it reads every block), only for the rare by-hash lookups. */
  function locate(hash: string): Located | undefined {
    if (!locations) {
      locations = new Map()
      for (let number = 0; number <= chain.lastBlock; number++) {
        const hashes = (JSON.parse(chain.headerBlock(number).toString('latin1')) as { transactions: string[] }).transactions
        hashes.forEach((txHash, index) => locations!.set(txHash, { block: number, index }))
      }
    }
    const found = locations.get(hash.toLowerCase())
    return found && released(found.block) !== undefined ? found : undefined
  }

  function receipt(hash: unknown): Result {
    if (typeof hash !== 'string') throw new RpcError(-32602, 'invalid transaction hash')
    const stored = chain.storedReceipt(hash)
    if (stored) {
      const number = Number.parseInt(/"blockNumber":"(0x[0-9a-f]+)"/.exec(stored.toString('latin1', 0, 200))![1]!, 16)
      if (released(number) === undefined) return NULL
      context.touchBlock(number)
      return stored
    }
    // a transaction no indexer asks about by hash: its block's receipts, parsed (rare)
    const found = locate(hash)
    if (!found) return NULL
    return JSON.stringify((JSON.parse(chain.blockReceipts(found.block).toString('latin1')) as unknown[])[found.index])
  }

  function transaction(hash: unknown): Result {
    if (typeof hash !== 'string') throw new RpcError(-32602, 'invalid transaction hash')
    const found = locate(hash)
    if (!found) return NULL
    const parsed = JSON.parse(chain.fullBlock(found.block).toString('latin1')) as { transactions: unknown[] }
    return JSON.stringify(parsed.transactions[found.index])
  }

  function allLogs(): ParsedLog[] {
    if (!logs) {
      logs = []
      for (const stored of chain.storedReceipts()) {
        const parsed = JSON.parse(stored.toString('latin1')) as { logs: Array<{ address: string; topics: string[]; blockNumber: string }> }
        for (const log of parsed.logs) {
          logs.push({ blockNumber: Number.parseInt(log.blockNumber, 16), address: log.address, topics: log.topics, json: JSON.stringify(log) })
        }
      }
      logs.sort((a, b) => a.blockNumber - b.blockNumber)
    }
    return logs
  }

  function matchesTopic(wanted: unknown, actual: string | undefined): boolean {
    if (wanted === null || wanted === undefined) return true
    if (actual === undefined) return false
    if (Array.isArray(wanted)) return wanted.length === 0 || wanted.some((w) => typeof w === 'string' && w.toLowerCase() === actual)
    return typeof wanted === 'string' && wanted.toLowerCase() === actual
  }

  function getLogs(filter: unknown): Result {
    if (!filter || typeof filter !== 'object') throw new RpcError(-32602, 'invalid filter')
    const f = filter as { fromBlock?: unknown; toBlock?: unknown; blockHash?: unknown; address?: unknown; topics?: unknown[] }
    const current = context.head()
    let from: number
    let to: number
    if (typeof f.blockHash === 'string') {
      const number = released(chain.numberOf(f.blockHash))
      if (number === undefined) throw new RpcError(-32000, 'unknown block')
      from = to = number
    } else {
      from = f.fromBlock === undefined ? current : blockNumberOf(f.fromBlock)!
      to = Math.min(current, f.toBlock === undefined ? current : blockNumberOf(f.toBlock)!)
    }
    const addresses =
      f.address === undefined || f.address === null
        ? undefined
        : new Set((Array.isArray(f.address) ? f.address : [f.address]).map((a) => String(a).toLowerCase()))
    const topics = f.topics ?? []
    const matches = allLogs().filter(
      (log) =>
        log.blockNumber >= from &&
        log.blockNumber <= to &&
        (!addresses || addresses.has(log.address)) &&
        topics.every((wanted, i) => matchesTopic(wanted, log.topics[i])),
    )
    return `[${matches.map((log) => log.json).join(',')}]`
  }

  /** The result of one call, or an RpcError; `unsupported` is told about methods the replay does not know. */
  function call(method: string, params: unknown[], unsupported: (method: string) => void): Result {
    switch (method) {
      case 'eth_chainId':
        return quantity(chain.chainId)
      case 'net_version':
        return `"${chain.chainId}"`
      case 'web3_clientVersion':
        return '"bench-replay/1.0"'
      case 'eth_syncing':
        return 'false'
      case 'eth_gasPrice':
      case 'eth_maxPriorityFeePerGas':
        return quantity(1_000_000)
      case 'eth_blockNumber':
        return quantity(context.head())
      case 'eth_getBlockByNumber':
        return block(released(blockNumberOf(params[0])), params[1])
      case 'eth_getBlockByHash':
        return block(typeof params[0] === 'string' ? released(chain.numberOf(params[0])) : undefined, params[1])
      case 'eth_getBlockTransactionCountByNumber': {
        const number = released(blockNumberOf(params[0]))
        return number === undefined ? NULL : quantity(number === 0 ? 0 : chain.meta.params.txPerBlock)
      }
      case 'eth_getBlockReceipts': {
        const target = params[0]
        const number = released(typeof target === 'string' && target.length === 66 ? chain.numberOf(target) : blockNumberOf(target))
        if (number === undefined) return NULL
        context.touchBlock(number)
        return chain.blockReceipts(number)
      }
      case 'eth_getTransactionReceipt':
        return receipt(params[0])
      case 'eth_getTransactionByHash':
        return transaction(params[0])
      case 'eth_getLogs':
        return getLogs(params[0])
      default:
        unsupported(method)
        throw new RpcError(-32601, `the method ${method} does not exist/is not available`)
    }
  }

  return { call }
}
