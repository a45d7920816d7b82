import { postJson } from '../../src/rpc/http-post.js'
import { flushDirtyPages } from '../lib/process.js'
import { createRpc } from '../../src/rpc/client.js'
import { candidateFilter } from '../../src/attribution/records.js'

/**
 * The floor of a backfill: exactly the block downloads an indexer cannot
 * avoid — batched `eth_getBlockByNumber(n, true)` over every block, each
 * answer parsed with `JSON.parse` — and nothing else, sent through the same
 * raw HTTP client the indexer's transport uses (undici's request API, whole
 * body read as one string): the fastest plain client, not a handicapped one.
 * `sweepFloor` tries it at several batch sizes and concurrencies and keeps
 * the fastest, so the floor is this client at its best operating point.
 *
 * `client: 'indexer-rpc'` asks for the same blocks through the indexer's own
 * RPC client on its defaults (adaptive transport + scanner): a diagnostic of
 * what the transport costs or saves, with no queue or database involved.
 */
export type FloorOptions = {
  url: string
  from: number
  to: number
  batchSize: number
  concurrency: number
  client?: 'raw' | 'indexer-rpc'
}

export type FloorResult = { ms: number; blocks: number; transactions: number; requests: number; batchSize: number; concurrency: number }

type Block = { number: string; transactions: unknown[] }
type RpcResponse = { id: number; result?: Block | null; error?: { message: string } }

async function rawBatch(url: string, numbers: number[]): Promise<number> {
  const body = JSON.stringify(
    numbers.map((number, id) => ({ jsonrpc: '2.0', id, method: 'eth_getBlockByNumber', params: [`0x${number.toString(16)}`, true] })),
  )
  const answer = await postJson(url, body, 120_000)
  let parsed: RpcResponse[]
  try {
    if (answer.status !== 200) throw new Error(`floor: HTTP ${answer.status}`)
    parsed = JSON.parse(answer.text) as RpcResponse[]
  } finally {
    answer.release()
  }
  let transactions = 0
  for (const [i, item] of parsed.entries()) {
    if (!item.result) throw new Error(`floor: block ${numbers[i]} missing (${item.error?.message ?? 'null'})`)
    transactions += item.result.transactions.length
  }
  return transactions
}

function indexerRpcBatcher(url: string) {
  const rpc = createRpc({ url, timeoutMs: 60_000, batchSize: 50, maxAttempts: 1 })
  return async (numbers: number[]): Promise<number> =>
    (await rpc.blocks(numbers[0]!, numbers.at(-1)!, candidateFilter(new Set()))).reduce((sum, block) => sum + block.txCount, 0)
}

export async function measureFloor(options: FloorOptions): Promise<FloorResult> {
  // the indexer's client sizes its own batches: hand it whole slices of blocks and let it split them
  const fetchBlocks = options.client === 'indexer-rpc' ? indexerRpcBatcher(options.url) : (numbers: number[]) => rawBatch(options.url, numbers)
  const step = options.client === 'indexer-rpc' ? Math.max(options.batchSize, 50) : options.batchSize
  let next = options.from
  let blocks = 0
  let transactions = 0
  let requests = 0
  async function worker() {
    while (next <= options.to) {
      const start = next
      const end = Math.min(options.to, start + step - 1)
      next = end + 1
      const numbers = Array.from({ length: end - start + 1 }, (_, i) => start + i)
      const counted = await fetchBlocks(numbers)
      transactions += counted
      requests++
      blocks += numbers.length
    }
  }
  flushDirtyPages()
  const started = performance.now()
  await Promise.all(Array.from({ length: options.concurrency }, () => worker()))
  return { ms: performance.now() - started, blocks, transactions, requests, batchSize: options.batchSize, concurrency: options.concurrency }
}

/**
 * The plain client's best operating point: each batch size × concurrency
 * over the first `sampleBlocks` blocks, fastest kept. Returns it with every
 * point tried (tx/s), so the report can show the sweep.
 */
export async function sweepFloor(options: {
  url: string
  from: number
  sampleBlocks: number
  batchSizes: readonly number[]
  concurrencies: readonly number[]
}): Promise<{ batchSize: number; concurrency: number; points: Array<{ batchSize: number; concurrency: number; txPerSecond: number }> }> {
  const points: Array<{ batchSize: number; concurrency: number; txPerSecond: number }> = []
  for (const batchSize of options.batchSizes) {
    for (const concurrency of options.concurrencies) {
      const result = await measureFloor({ url: options.url, from: options.from, to: options.from + options.sampleBlocks - 1, batchSize, concurrency })
      points.push({ batchSize, concurrency, txPerSecond: (result.transactions / result.ms) * 1000 })
    }
  }
  const best = points.reduce((a, b) => (b.txPerSecond > a.txPerSecond ? b : a))
  return { batchSize: best.batchSize, concurrency: best.concurrency, points }
}
