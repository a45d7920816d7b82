import { setTimeout as sleep } from 'node:timers/promises'
import { candidateFilter, detectCandidate, needsReceipt } from '../../src/attribution/records.js'
import { entryPointSet } from '../../src/attribution/userops.js'
import { defaultEntryPoints } from '../../src/config/chains.js'
import type { RawTransaction } from '../../src/rpc/objects.js'
import { createRpc } from '../../src/rpc/client.js'
import { createAnswerBuffers } from '../../src/rpc/wire/answer-buffers.js'
import { postJsonOverUndici } from '../../src/rpc/wire/http-post.js'
import { flushDirtyPages } from '../lib/process.js'

/**
 * The floor of a backfill: exactly the downloads an indexer cannot avoid —
 * batched `eth_getBlockByNumber(n, true)` over every block (and, on a dense
 * chain, `eth_getBlockReceipts(n)` beside each: most transactions there need
 * their outcome), each answer parsed with `JSON.parse` — and nothing else,
 * sent through undici's request API (what Node's fetch is built on) with the
 * answer read into a reused buffer and decoded as Latin-1 when ASCII: the
 * fastest plain client, not a handicapped one. (The indexer reads http
 * answers with its own socket reader, http-socket.ts: not a plain client,
 * and what it saves is the indexer's, as the block scanner's is.) It
 * behaves as a plain client should on a node that pushes back: a 429 is
 * asked again once its Retry-After has passed. `sweepFloor` tries it at every batch size × concurrency and keeps
 * the fastest, so the floor is this client at its best operating point on
 * the node it runs against.
 *
 * `candidates: true` is the plain client that produces the indexer's
 * answer on a sparse chain: every block, then the receipts of the
 * transactions that need one — those the indexer itself would ask for
 * (a suffix ending with the marker, an EntryPoint bundle carrying an
 * attributed operation: the same detection, records.ts) — batched
 * `eth_getTransactionReceipt` calls at the same batch size, sharing the same
 * requests in flight (a receipts batch goes before the next blocks). The
 * blocks-only figure leaves out receipts the answer needs; this one is the
 * fair floor of a sparse chain (issue 41).
 *
 * `client: 'indexer-rpc'` asks for the same blocks through the indexer's own
 * RPC client on its defaults (adaptive transport + scanner): a diagnostic of
 * what the transport costs or saves, with no queue or database involved.
 */
export type FloorOptions = {
  url: string
  from: number
  to: number
  /** Blocks per request (with `receipts`, each block is two calls). */
  batchSize: number
  concurrency: number
  client?: 'raw' | 'indexer-rpc'
  /** Ask for every block's receipts too (`eth_getBlockReceipts`), in the same batch as the block. */
  receipts?: boolean
  /** Ask for the candidates' receipts (`eth_getTransactionReceipt`, `batchSize` a request) after their blocks (see above). */
  candidates?: boolean
  /** Write the machine's dirty pages out first (default), so no other run's writeback lands in this one. */
  flush?: boolean
}

export type FloorResult = {
  ms: number
  blocks: number
  transactions: number
  requests: number
  /** Requests the node refused with 429 (each asked again after its Retry-After). */
  refused: number
  /** Candidates' receipts fetched (`candidates`), else 0. */
  receipts: number
  batchSize: number
  concurrency: number
  /** CPU of this process over the run (the client and what it parses; the bench does nothing else meanwhile), s. */
  clientCpuSeconds: number
}

type Block = { number: string; transactions: unknown[] }
type RpcResponse = { id: number; result?: Block | unknown[] | { transactionHash?: string } | null; error?: { message: string } }

const hex = (number: number) => `0x${number.toString(16)}`
const RETRY_AFTER_DEFAULT_MS = 1_000
const MOST_REFUSALS_IN_A_ROW = 100
/** The plain client's answer buffers: as many kept as the widest sweep point has in flight. */
const floorBuffers = createAnswerBuffers({ kept: 16 })

/** One batch of `calls`, asked again after each 429; resolves to the parsed answer and the refusals met. */
async function postBatch(url: string, calls: Array<{ method: string; params: unknown[] }>, what: string): Promise<{ parsed: RpcResponse[]; refused: number }> {
  const body = JSON.stringify(calls.map((call, id) => ({ jsonrpc: '2.0', ...call, id })))
  for (let refused = 0; refused <= MOST_REFUSALS_IN_A_ROW; refused++) {
    const answer = await postJsonOverUndici(url, body, 120_000, floorBuffers)
    try {
      if (answer.status === 429) {
        await sleep(answer.retryAfterMs ?? RETRY_AFTER_DEFAULT_MS)
        continue
      }
      if (answer.status !== 200) throw new Error(`floor: HTTP ${answer.status}`)
      return { parsed: JSON.parse(answer.text) as RpcResponse[], refused }
    } finally {
      answer.release()
    }
  }
  throw new Error(`floor: the node refused ${what} ${MOST_REFUSALS_IN_A_ROW} times in a row`)
}

type Counted = { transactions: number; refused: number; candidates: string[] }

const ENTRY_POINTS = entryPointSet(defaultEntryPoints)

/** One batch for `numbers`, asked again after each 429: the transactions counted, the refusals met, the candidates needing a receipt (with `candidates`). */
async function rawBatch(url: string, numbers: number[], receipts: boolean, candidates: boolean): Promise<Counted> {
  const calls = numbers.flatMap((number) => {
    const block = { method: 'eth_getBlockByNumber', params: [hex(number), true] }
    return receipts ? [block, { method: 'eth_getBlockReceipts', params: [hex(number)] }] : [block]
  })
  const { parsed, refused } = await postBatch(url, calls, `blocks ${numbers[0]}..${numbers.at(-1)}`)
  return { transactions: countTransactions(parsed, numbers, receipts), refused, candidates: candidates ? candidatesOf(parsed) : [] }
}

/** The hashes of the transactions whose receipt the indexer needs (its own detection: the same answer). */
function candidatesOf(parsed: RpcResponse[]): string[] {
  const hashes: string[] = []
  for (const item of parsed) {
    for (const tx of (item.result as Block).transactions as RawTransaction[]) {
      const candidate = detectCandidate(tx, ENTRY_POINTS)
      if (candidate && needsReceipt(candidate)) hashes.push(tx.hash)
    }
  }
  return hashes
}

/** The receipts of `hashes` in one batch; each must be there and be the one asked. */
async function rawReceipts(url: string, hashes: string[]): Promise<{ refused: number }> {
  const { parsed, refused } = await postBatch(url, hashes.map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] })), `${hashes.length} receipts`)
  const byId = new Map(parsed.map((item) => [item.id, item]))
  hashes.forEach((hash, id) => {
    const receipt = byId.get(id)?.result as { transactionHash?: string } | null | undefined
    if (receipt?.transactionHash?.toLowerCase() !== hash.toLowerCase()) throw new Error(`floor: receipt of ${hash} missing or another`)
  })
  return { refused }
}

function countTransactions(parsed: RpcResponse[], numbers: number[], receipts: boolean): number {
  const perBlock = receipts ? 2 : 1
  const byId = new Map(parsed.map((item) => [item.id, item]))
  let transactions = 0
  numbers.forEach((number, i) => {
    const item = byId.get(i * perBlock)
    const block = item?.result as Block | null | undefined
    if (!block) throw new Error(`floor: block ${number} missing (${item?.error?.message ?? 'null'})`)
    transactions += block.transactions.length
    if (!receipts) return
    // a block's receipts: one per transaction, or the node is not serving what was asked
    const blockReceipts = byId.get(i * perBlock + 1)?.result
    if (!Array.isArray(blockReceipts) || blockReceipts.length !== block.transactions.length) {
      throw new Error(`floor: block ${number}'s receipts do not match its transactions`)
    }
  })
  return transactions
}

function indexerRpcBatcher(url: string) {
  // the indexer's own attempts: on a node that caps requests in flight, its 429s are asked again after Retry-After, as the daemon's are
  const rpc = createRpc({ url, timeoutMs: 60_000, batchSize: 50 })
  return async (numbers: number[]): Promise<Counted> => ({
    transactions: (await rpc.blocks(numbers[0]!, numbers.at(-1)!, candidateFilter(new Set()), (tx) => tx)).reduce((sum, block) => sum + block.txCount, 0),
    refused: 0,
    candidates: [],
  })
}

export async function measureFloor(options: FloorOptions): Promise<FloorResult> {
  // the indexer's client sizes its own batches: hand it whole slices of blocks and let it split them
  const fetchBlocks =
    options.client === 'indexer-rpc'
      ? indexerRpcBatcher(options.url)
      : (numbers: number[]) => rawBatch(options.url, numbers, options.receipts === true, options.candidates === true)
  const step = options.client === 'indexer-rpc' ? Math.max(options.batchSize, 50) : options.batchSize
  let next = options.from
  let blocks = 0
  let transactions = 0
  let requests = 0
  let refused = 0
  let receipts = 0
  /** Candidates found and not yet asked; cut into batches of `batchSize`, the last of a run shorter. */
  const pending: string[] = []
  let blocksOut = 0
  async function worker() {
    for (;;) {
      // a batch of receipts first, when one is full (or nothing else is left to ask): the blocks' requests wait behind
      if (pending.length >= options.batchSize || (pending.length > 0 && next > options.to && blocksOut === 0)) {
        const hashes = pending.splice(0, options.batchSize)
        refused += (await rawReceipts(options.url, hashes)).refused
        receipts += hashes.length
        requests++
        continue
      }
      // nothing left but what the worker with blocks still out will find (it asks their receipts itself)
      if (next > options.to) break
      const start = next
      const end = Math.min(options.to, start + step - 1)
      next = end + 1
      const numbers = Array.from({ length: end - start + 1 }, (_, i) => start + i)
      blocksOut++
      const counted = await fetchBlocks(numbers).finally(() => blocksOut--)
      pending.push(...counted.candidates)
      transactions += counted.transactions
      refused += counted.refused
      requests++
      blocks += numbers.length
    }
  }
  if (options.flush !== false) flushDirtyPages()
  const started = performance.now()
  const cpuBefore = process.cpuUsage()
  await Promise.all(Array.from({ length: options.concurrency }, () => worker()))
  const cpu = process.cpuUsage(cpuBefore)
  return {
    ms: performance.now() - started,
    blocks,
    transactions,
    requests,
    refused,
    receipts,
    batchSize: options.batchSize,
    concurrency: options.concurrency,
    clientCpuSeconds: (cpu.user + cpu.system) / 1e6,
  }
}

export type SweepPoint = { batchSize: number; concurrency: number; txPerSecond: number; refused: number }

export type Sweep = {
  /** Every point on the sample, fastest first. */
  ranked: SweepPoint[]
  /** The fastest points of the sample, each fetching the whole chain, fastest first. */
  finalists: SweepPoint[]
  /** The winner: the fastest finalist. */
  batchSize: number
  concurrency: number
}

const pointOf = (result: FloorResult): SweepPoint => ({
  batchSize: result.batchSize,
  concurrency: result.concurrency,
  txPerSecond: (result.transactions / result.ms) * 1000,
  refused: result.refused,
})
const fastestFirst = (a: SweepPoint, b: SweepPoint) => b.txPerSecond - a.txPerSecond

/**
 * The plain client's best operating point on this node: every batch size ×
 * concurrency ranked on the first `sampleBlocks` blocks, the `finalists`
 * best of them fetching the whole chain (a sample can favour a point by
 * luck), and the fastest of those wins.
 */
export async function sweepFloor(options: {
  url: string
  from: number
  to: number
  sampleBlocks: number
  batchSizes: readonly number[]
  concurrencies: readonly number[]
  finalists: number
  receipts?: boolean
  candidates?: boolean
}): Promise<Sweep> {
  const receipts = options.receipts === true
  const candidates = options.candidates === true
  // once for the whole sweep: a sync per point costs seconds on a busy machine, for points that only rank
  flushDirtyPages()
  const ranked: SweepPoint[] = []
  for (const batchSize of options.batchSizes) {
    for (const concurrency of options.concurrencies) {
      const to = Math.min(options.to, options.from + options.sampleBlocks - 1)
      ranked.push(pointOf(await measureFloor({ url: options.url, from: options.from, to, batchSize, concurrency, receipts, candidates, flush: false })))
    }
  }
  ranked.sort(fastestFirst)
  const finalists: SweepPoint[] = []
  for (const point of ranked.slice(0, options.finalists)) {
    finalists.push(pointOf(await measureFloor({ url: options.url, from: options.from, to: options.to, batchSize: point.batchSize, concurrency: point.concurrency, receipts, candidates })))
  }
  finalists.sort(fastestFirst)
  return { ranked, finalists, batchSize: finalists[0]!.batchSize, concurrency: finalists[0]!.concurrency }
}
