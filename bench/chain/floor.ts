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
 * `eth_getTransactionReceipt` calls of their own length (`receiptBatchSize`:
 * the best length for blocks is not the best for light receipts, and a
 * client tied to one pays a round trip per block batch on a remote node).
 * As a plain client would, it gathers candidates across block batches and
 * sends a receipts batch, ahead of the next blocks, once one is full; when
 * no blocks are left to ask, what remains goes at once, split among the
 * idle requests in flight. Receipts share the blocks' requests in flight.
 * The blocks-only figure leaves out receipts the answer needs; this one is
 * the fair floor of a sparse chain (issue 41).
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
  /** Ask for the candidates' receipts (`eth_getTransactionReceipt`) after their blocks (see above). */
  candidates?: boolean
  /** Candidates' receipts per request (`candidates`); `batchSize` when not given. */
  receiptBatchSize?: number
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
  /** Candidates' receipts per request (the tail's shares may be shorter). */
  receiptBatchSize: number
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

/** Wakes every waiter at each `fire` (the floor's idle workers, when blocks come back). */
function createSignal() {
  let wake = () => {}
  let waited = new Promise<void>((resolve) => (wake = resolve))
  return {
    next: () => waited,
    fire() {
      wake()
      waited = new Promise<void>((resolve) => (wake = resolve))
    },
  }
}

export async function measureFloor(options: FloorOptions): Promise<FloorResult> {
  // the indexer's client sizes its own batches: hand it whole slices of blocks and let it split them
  const fetchBlocks =
    options.client === 'indexer-rpc'
      ? indexerRpcBatcher(options.url)
      : (numbers: number[]) => rawBatch(options.url, numbers, options.receipts === true, options.candidates === true)
  const step = options.client === 'indexer-rpc' ? Math.max(options.batchSize, 50) : options.batchSize
  const receiptBatchSize = options.receiptBatchSize ?? options.batchSize
  let next = options.from
  let blocks = 0
  let transactions = 0
  let requests = 0
  let refused = 0
  let receipts = 0
  /** Candidates found and not yet asked, gathered across block batches. */
  const pending: string[] = []
  let blocksOut = 0
  let requestsOut = 0
  const blocksArrived = createSignal()

  /** The receipts batch to send now, if any: a full one, or (no blocks left to ask) this worker's share of what remains. */
  function receiptsToSend(): string[] | undefined {
    if (pending.length >= receiptBatchSize) return pending.splice(0, receiptBatchSize)
    if (next <= options.to || pending.length === 0) return undefined
    // the tail: no new block will fill a batch soon, and a request slot left idle is time lost; each idle worker takes an equal share
    const idle = Math.max(1, options.concurrency - requestsOut)
    return pending.splice(0, Math.min(receiptBatchSize, Math.ceil(pending.length / idle)))
  }

  async function worker() {
    for (;;) {
      const hashes = receiptsToSend()
      if (hashes) {
        requestsOut++
        refused += (await rawReceipts(options.url, hashes).finally(() => requestsOut--)).refused
        receipts += hashes.length
        requests++
        continue
      }
      if (next > options.to) {
        if (blocksOut === 0) break
        // blocks still out may bring candidates: wait for them rather than leave their receipts to one worker
        await blocksArrived.next()
        continue
      }
      const start = next
      const end = Math.min(options.to, start + step - 1)
      next = end + 1
      const numbers = Array.from({ length: end - start + 1 }, (_, i) => start + i)
      blocksOut++
      requestsOut++
      const counted = await fetchBlocks(numbers).finally(() => {
        blocksOut--
        requestsOut--
      })
      pending.push(...counted.candidates)
      transactions += counted.transactions
      refused += counted.refused
      requests++
      blocks += numbers.length
      blocksArrived.fire()
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
    receiptBatchSize,
    concurrency: options.concurrency,
    clientCpuSeconds: (cpu.user + cpu.system) / 1e6,
  }
}

export type SweepPoint = { batchSize: number; receiptBatchSize: number; concurrency: number; txPerSecond: number; refused: number }

export type Sweep = {
  /** Every point on the sample, fastest first. */
  ranked: SweepPoint[]
  /** The receipts' length every block batch × concurrency was ranked at (the first stage; `candidates` only). */
  sampleReceiptBatchSize: number | undefined
  /** The fastest points of the sample, each fetching the whole chain, fastest first. */
  finalists: SweepPoint[]
  /** The winner: the fastest finalist. */
  batchSize: number
  /** Candidates' receipts per request at the winner (`batchSize` when the client asks none). */
  receiptBatchSize: number
  concurrency: number
}

const pointOf = (result: FloorResult): SweepPoint => ({
  batchSize: result.batchSize,
  receiptBatchSize: result.receiptBatchSize,
  concurrency: result.concurrency,
  txPerSecond: (result.transactions / result.ms) * 1000,
  refused: result.refused,
})
const fastestFirst = (a: SweepPoint, b: SweepPoint) => b.txPerSecond - a.txPerSecond
const samePoint = (a: Omit<SweepPoint, 'txPerSecond' | 'refused'>) => (b: SweepPoint) =>
  a.batchSize === b.batchSize && a.concurrency === b.concurrency && a.receiptBatchSize === b.receiptBatchSize

/** The grid's middle length: the first stage ranks block points at a length neither very short nor very long. */
export function middleOf(lengths: readonly number[]): number {
  const sorted = [...lengths].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)]!
}

/**
 * The plain client's best operating point on this node, in two stages on
 * the first `sampleBlocks` blocks, then the `finalists` best of every
 * point fetching the whole chain (a sample can favour a point by luck); the
 * fastest of those wins.
 *
 * 1. Every block batch size × concurrency, with the candidates' receipts
 *    (`candidates`) at one length for all: the grid's middle, so no block
 *    point is ranked by its receipts' length (tied to the blocks', a short
 *    block batch would also pay short receipts batches).
 * 2. At the `receiptBlockPoints` best block points of stage 1, every
 *    receipts length of `receiptBatchSizes`. Sweeping them jointly with the
 *    blocks' grid would multiply the sample points (16 × 6 = 96); two block
 *    points × the other 5 lengths add 10 to stage 1's 16, about two passes
 *    over a fifth of the chain. Two, not one: receipts share the requests
 *    in flight with blocks, so a shorter or longer receipts batch can favour
 *    another concurrency than stage 1's winner.
 */
export async function sweepFloor(options: {
  url: string
  from: number
  to: number
  sampleBlocks: number
  batchSizes: readonly number[]
  concurrencies: readonly number[]
  /** Lengths of the candidates' receipts batches to try (`candidates`; stage 2). */
  receiptBatchSizes?: readonly number[]
  /** How many of stage 1's best block points stage 2 tries every receipts length at. */
  receiptBlockPoints?: number
  finalists: number
  receipts?: boolean
  candidates?: boolean
}): Promise<Sweep> {
  const receipts = options.receipts === true
  const candidates = options.candidates === true
  const receiptLengths = candidates ? (options.receiptBatchSizes ?? []) : []
  // without a grid of its own, receipts go at the blocks' batch size, as before issue 41's sweep
  const sampleReceiptBatchSize = receiptLengths.length > 0 ? middleOf(receiptLengths) : undefined
  const to = Math.min(options.to, options.from + options.sampleBlocks - 1)
  const onSample = async (batchSize: number, concurrency: number, receiptBatchSize: number | undefined) =>
    pointOf(await measureFloor({ url: options.url, from: options.from, to, batchSize, concurrency, receipts, candidates, flush: false, ...(receiptBatchSize !== undefined && { receiptBatchSize }) }))
  // once for the whole sweep: a sync per point costs seconds on a busy machine, for points that only rank
  flushDirtyPages()
  const blockPoints: SweepPoint[] = []
  for (const batchSize of options.batchSizes) {
    for (const concurrency of options.concurrencies) blockPoints.push(await onSample(batchSize, concurrency, sampleReceiptBatchSize))
  }
  blockPoints.sort(fastestFirst)
  const ranked = [...blockPoints]
  for (const best of blockPoints.slice(0, receiptLengths.length > 0 ? (options.receiptBlockPoints ?? 2) : 0)) {
    for (const receiptBatchSize of receiptLengths) {
      if (ranked.some(samePoint({ ...best, receiptBatchSize }))) continue
      ranked.push(await onSample(best.batchSize, best.concurrency, receiptBatchSize))
    }
  }
  ranked.sort(fastestFirst)
  const finalists: SweepPoint[] = []
  for (const point of ranked.slice(0, options.finalists)) {
    const { batchSize, concurrency, receiptBatchSize } = point
    finalists.push(pointOf(await measureFloor({ url: options.url, from: options.from, to: options.to, batchSize, concurrency, receiptBatchSize, receipts, candidates })))
  }
  finalists.sort(fastestFirst)
  const winner = finalists[0]!
  return { ranked, sampleReceiptBatchSize, finalists, batchSize: winner.batchSize, receiptBatchSize: winner.receiptBatchSize, concurrency: winner.concurrency }
}
