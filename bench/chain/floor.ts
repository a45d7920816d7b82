import { createRpc } from '../../src/rpc/client.js'

/**
 * The floor of a backfill: exactly the block downloads an indexer cannot
 * avoid — batched `eth_getBlockByNumber(n, true)` over the same ranges, at
 * the same batch size and concurrency as the pipeline, each response parsed
 * as JSON — and nothing else.
 *
 * `client: 'fetch'` (the floor) posts the batch with fetch and parses it with
 * `response.json()`. `client: 'indexer-rpc'` asks for the same blocks through
 * the indexer's own RPC client (`createRpc(...).blocks`, viem's batching HTTP
 * transport as the indexer configures it): the difference between the two is
 * what the transport costs, with no queue or database involved.
 */
export type FloorOptions = {
  url: string
  from: number
  to: number
  rangeSize: number
  batchSize: number
  concurrency: number
  client?: 'fetch' | 'indexer-rpc'
}

export type FloorResult = { ms: number; blocks: number; transactions: number; requests: number }

type Block = { number: string; transactions: unknown[] }
type RpcResponse = { id: number; result?: Block | null; error?: { message: string } }

async function fetchBatch(url: string, numbers: number[]): Promise<Block[]> {
  const body = JSON.stringify(
    numbers.map((number, id) => ({ jsonrpc: '2.0', id, method: 'eth_getBlockByNumber', params: [`0x${number.toString(16)}`, true] })),
  )
  const response = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } })
  if (!response.ok) throw new Error(`floor: HTTP ${response.status}`)
  const parsed = (await response.json()) as RpcResponse[]
  return parsed.map((item, i) => {
    if (!item.result) throw new Error(`floor: block ${numbers[i]} missing (${item.error?.message ?? 'null'})`)
    return item.result
  })
}

function indexerRpcBatcher(url: string, batchSize: number) {
  const rpc = createRpc({ url, timeoutMs: 60_000, batchSize, maxAttempts: 1 })
  // the indexer's own block path (batches read by its scanner); sparse arrays stand in for the transaction counts
  return async (numbers: number[]): Promise<Block[]> =>
    (await rpc.blocks(numbers[0]!, numbers.at(-1)!, new Set())).map((block) => ({ number: String(block.number), transactions: new Array(block.txCount) }))
}

export async function measureFloor(options: FloorOptions): Promise<FloorResult> {
  const fetchBlocks =
    options.client === 'indexer-rpc' ? indexerRpcBatcher(options.url, options.batchSize) : (numbers: number[]) => fetchBatch(options.url, numbers)
  const ranges: Array<[number, number]> = []
  for (let start = options.from; start <= options.to; start += options.rangeSize) {
    ranges.push([start, Math.min(options.to, start + options.rangeSize - 1)])
  }
  let next = 0
  let blocks = 0
  let transactions = 0
  let requests = 0
  async function worker() {
    while (next < ranges.length) {
      const [start, end] = ranges[next++]!
      for (let batchStart = start; batchStart <= end; batchStart += options.batchSize) {
        const numbers: number[] = []
        for (let n = batchStart; n <= Math.min(end, batchStart + options.batchSize - 1); n++) numbers.push(n)
        const fetched = await fetchBlocks(numbers)
        requests++
        blocks += fetched.length
        for (const block of fetched) transactions += block.transactions.length
      }
    }
  }
  const started = performance.now()
  await Promise.all(Array.from({ length: options.concurrency }, () => worker()))
  return { ms: performance.now() - started, blocks, transactions, requests }
}
