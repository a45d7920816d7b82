import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Chain } from './files.js'
import { gasUsedOf, receiptJson } from './generate.js'

/**
 * A JSON-RPC node that replays a generated chain, made to cost next to
 * nothing so that a benchmark measures its client: blocks are answered with
 * their pre-serialized bytes (the response is the request id spliced around
 * them, written with one writev), batches included.
 *
 * It serves what an indexer uses: eth_chainId, net_version, eth_blockNumber,
 * eth_getBlockByNumber / ByHash (full or hashes only), eth_getBlockReceipts,
 * eth_getTransactionReceipt, eth_getTransactionByHash, eth_getLogs, plus a few
 * trivia. Anything else is a JSON-RPC error -32601 and is counted, so a bench
 * can tell the indexer called something the replay does not know.
 *
 * Blocks are released up to a head that is either fixed or grows at a
 * configured rate (live mode); anything above the head does not exist yet
 * (null), like on a real node.
 *
 * Control endpoints (plain HTTP, not JSON-RPC):
 *   GET  /__replay/stats         counters, release state, first block request time
 *   POST /__replay/release       {"head"?: n, "rate"?: blocks per second}
 *   POST /__replay/reset-stats
 */

export type ReleaseState = {
  /** Head at `baseAt`. */
  baseHead: number
  /** Epoch ms when the current release schedule started. */
  baseAt: number
  /** Blocks per second after `baseAt`; 0 keeps the head at `baseHead`. */
  rate: number
}

export type ReplayStats = {
  chainId: number
  lastBlock: number
  head: number
  release: ReleaseState
  requests: number
  batches: number
  calls: Record<string, number>
  unsupported: Record<string, number>
  fullBlocksServed: number
  headerBlocksServed: number
  bytesOut: number
  /** Epoch ms of the first request naming a block above 0 since the last reset: when an indexer started working. */
  firstBlockRequestAt: number | null
  lastRequestAt: number | null
}

export type ReplayServer = {
  url: string
  stats(): ReplayStats
  release(options: { head?: number; rate?: number }): ReleaseState
  close(): Promise<void>
}

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

type RpcRequest = { id?: unknown; method?: unknown; params?: unknown }
type Result = Buffer | string

const NULL = 'null'
const quantity = (value: number) => `"0x${value.toString(16)}"`

type ParsedLog = { blockNumber: number; address: string; topics: string[]; json: string }
type Located = { block: number; index: number }

export function createReplayServer(chain: Chain, options: { head?: number; rate?: number } = {}) {
  let release: ReleaseState = { baseHead: options.head ?? chain.lastBlock, baseAt: Date.now(), rate: options.rate ?? 0 }
  let stats = freshStats()
  let logs: ParsedLog[] | undefined
  let locations: Map<string, Located> | undefined

  function freshStats() {
    return {
      requests: 0,
      batches: 0,
      calls: {} as Record<string, number>,
      unsupported: {} as Record<string, number>,
      fullBlocksServed: 0,
      headerBlocksServed: 0,
      bytesOut: 0,
      firstBlockRequestAt: null as number | null,
      lastRequestAt: null as number | null,
    }
  }

  function head(): number {
    if (release.rate <= 0) return Math.min(chain.lastBlock, release.baseHead)
    const grown = Math.floor(((Date.now() - release.baseAt) * release.rate) / 1000)
    return Math.min(chain.lastBlock, release.baseHead + grown)
  }

  function touchBlock(number: number): void {
    if (number > 0 && stats.firstBlockRequestAt === null) stats.firstBlockRequestAt = Date.now()
  }

  function blockNumberOf(tag: unknown): number | undefined {
    if (typeof tag === 'number') return tag
    if (typeof tag !== 'string') throw new RpcError(-32602, 'invalid block tag')
    if (tag === 'latest' || tag === 'pending' || tag === 'safe' || tag === 'finalized') return head()
    if (tag === 'earliest') return 0
    if (/^0x[0-9a-fA-F]+$/.test(tag)) return Number.parseInt(tag, 16)
    throw new RpcError(-32602, `invalid block tag ${tag}`)
  }

  function released(number: number | undefined): number | undefined {
    return number !== undefined && number >= 0 && number <= head() ? number : undefined
  }

  function block(number: number | undefined, full: unknown): Result {
    if (number === undefined) return NULL
    touchBlock(number)
    if (full === true) {
      stats.fullBlocksServed++
      return chain.fullBlock(number)
    }
    stats.headerBlocksServed++
    return chain.headerBlock(number)
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

  type RawTransaction = { hash: string; from: string; to: string | null; gas: string; gasPrice: string; type: string }

  /** Receipts of a whole block: stored ones as generated, the others rebuilt from their transaction. */
  function blockReceipts(number: number): string[] {
    const parsed = JSON.parse(chain.fullBlock(number).toString('latin1')) as { hash: string; transactions: RawTransaction[] }
    let cumulativeGasUsed = 0
    return parsed.transactions.map((tx, transactionIndex) => {
      const gasUsed = gasUsedOf(tx.hash, Number.parseInt(tx.gas, 16))
      cumulativeGasUsed += gasUsed
      const stored = chain.storedReceipt(tx.hash)
      if (stored) return stored.toString('latin1')
      return receiptJson({
        blockHash: parsed.hash,
        blockNumber: number,
        transactionHash: tx.hash,
        transactionIndex,
        from: tx.from,
        to: tx.to,
        type: Number.parseInt(tx.type, 16),
        cumulativeGasUsed,
        gasUsed,
        effectiveGasPrice: Number.parseInt(tx.gasPrice, 16),
        status: 1,
        logs: [],
        firstLogIndex: 0,
      }).json
    })
  }

  function receipt(hash: unknown): Result {
    if (typeof hash !== 'string') throw new RpcError(-32602, 'invalid transaction hash')
    const stored = chain.storedReceipt(hash)
    if (stored) {
      const number = Number.parseInt(/"blockNumber":"(0x[0-9a-f]+)"/.exec(stored.toString('latin1', 0, 200))![1]!, 16)
      if (released(number) === undefined) return NULL
      touchBlock(number)
      return stored
    }
    const found = locate(hash)
    if (!found) return NULL
    return blockReceipts(found.block)[found.index]!
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
    const current = head()
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

  function call(method: string, params: unknown[]): Result {
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
        return quantity(head())
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
        const number = released(
          typeof target === 'string' && target.length === 66 ? chain.numberOf(target) : blockNumberOf(target),
        )
        if (number === undefined) return NULL
        touchBlock(number)
        return `[${blockReceipts(number).join(',')}]`
      }
      case 'eth_getTransactionReceipt':
        return receipt(params[0])
      case 'eth_getTransactionByHash':
        return transaction(params[0])
      case 'eth_getLogs':
        return getLogs(params[0])
      default:
        stats.unsupported[method] = (stats.unsupported[method] ?? 0) + 1
        throw new RpcError(-32601, `the method ${method} does not exist/is not available`)
    }
  }

  /** The response to one JSON-RPC call, as chunks to write in order. */
  function respond(request: RpcRequest, chunks: Array<Buffer | string>): void {
    const id = request.id === undefined ? 'null' : JSON.stringify(request.id)
    try {
      if (typeof request.method !== 'string') throw new RpcError(-32600, 'invalid request')
      stats.calls[request.method] = (stats.calls[request.method] ?? 0) + 1
      const result = call(request.method, Array.isArray(request.params) ? request.params : [])
      chunks.push(`{"jsonrpc":"2.0","id":${id},"result":`, result, '}')
    } catch (error) {
      const code = error instanceof RpcError ? error.code : -32603
      chunks.push(`{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify({ code, message: (error as Error).message })}}`)
    }
  }

  function send(response: ServerResponse, status: number, chunks: Array<Buffer | string>): void {
    const buffers = chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk))
    const length = buffers.reduce((sum, buffer) => sum + buffer.length, 0)
    stats.bytesOut += length
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': length })
    // one writev for the whole response instead of a syscall per chunk
    response.cork()
    for (const buffer of buffers) response.write(buffer)
    response.uncork()
    response.end()
  }

  function handleRpc(body: Buffer, response: ServerResponse): void {
    stats.requests++
    stats.lastRequestAt = Date.now()
    let payload: unknown
    try {
      payload = JSON.parse(body.toString('utf8'))
    } catch {
      send(response, 200, ['{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}'])
      return
    }
    const chunks: Array<Buffer | string> = []
    if (Array.isArray(payload)) {
      stats.batches++
      chunks.push('[')
      payload.forEach((request, i) => {
        if (i > 0) chunks.push(',')
        respond((request ?? {}) as RpcRequest, chunks)
      })
      chunks.push(']')
    } else {
      respond((payload ?? {}) as RpcRequest, chunks)
    }
    send(response, 200, chunks)
  }

  function snapshot(): ReplayStats {
    return { chainId: chain.chainId, lastBlock: chain.lastBlock, head: head(), release: { ...release }, ...stats }
  }

  function setRelease(next: { head?: number; rate?: number }): ReleaseState {
    release = { baseHead: Math.min(chain.lastBlock, next.head ?? head()), baseAt: Date.now(), rate: next.rate ?? 0 }
    return { ...release }
  }

  function handleControl(request: IncomingMessage, body: Buffer, response: ServerResponse): void {
    const path = (request.url ?? '').split('?')[0]
    let result: unknown
    if (path === '/__replay/stats') result = snapshot()
    else if (path === '/__replay/release' && request.method === 'POST') {
      result = setRelease(body.length > 0 ? (JSON.parse(body.toString('utf8')) as { head?: number; rate?: number }) : {})
    } else if (path === '/__replay/reset-stats' && request.method === 'POST') {
      stats = freshStats()
      result = snapshot()
    } else {
      send(response, 404, ['{"error":"unknown control path"}'])
      return
    }
    send(response, 200, [JSON.stringify(result)])
  }

  const server: Server = createHttpServer((request, response) => {
    const parts: Buffer[] = []
    request.on('data', (part: Buffer) => parts.push(part))
    request.on('end', () => {
      const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts)
      try {
        if (request.url?.startsWith('/__replay/')) handleControl(request, body, response)
        else if (request.method === 'POST') handleRpc(body, response)
        else send(response, 405, ['{"error":"JSON-RPC needs POST"}'])
      } catch (error) {
        if (!response.headersSent) send(response, 500, [JSON.stringify({ error: (error as Error).message })])
      }
    })
  })
  // clients keep connections open across a whole backfill
  server.keepAliveTimeout = 65_000
  server.headersTimeout = 66_000

  return {
    async listen(port = 0, host = '127.0.0.1'): Promise<ReplayServer> {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(port, host, () => resolve())
      })
      const address = server.address() as AddressInfo
      return {
        url: `http://${host}:${address.port}`,
        stats: snapshot,
        release: setRelease,
        close: () =>
          new Promise<void>((resolve) => {
            server.closeAllConnections()
            server.close(() => resolve())
          }),
      }
    },
  }
}
