import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import { numberToHex, type Hex } from 'viem'
import { hasMarker } from '../attribution/marker.js'
import type { RawReceipt, RawTransaction } from '../attribution/records.js'
import { scanBlockBatch, ScanFailed, type ScannedBlock } from './block-scan.js'
import { BlockNotFoundError, MismatchedAnswerError, ReceiptNotFoundError } from './errors.js'

/**
 * The indexer's bulk calls — full blocks and receipts — as JSON-RPC batches
 * over undici. Blocks are read by the scanner in block-scan.ts rather than
 * parsed: viem's transport hands back parsed JSON, and parsing every
 * transaction is the cost this path exists to avoid; receipts skip viem's
 * per-call overhead, which showed in the backfill profile. It keeps viem's
 * transport behaviour: a timeout per request, retries with exponential
 * backoff on 429, 5xx, timeouts, dropped connections and unreadable bodies,
 * honouring Retry-After.
 */
export type BatchOptions = {
  url: string
  timeoutMs: number
  batchSize: number
  retryCount: number
  retryDelayMs?: number
  onResponse?: (status: number) => void
}

export class RpcHttpError extends Error {
  override name = 'RpcHttpError'
  constructor(
    readonly status: number,
    readonly retryAfterMs: number | undefined,
  ) {
    super(`RPC answered HTTP ${status}`)
  }
}

export class RpcItemError extends Error {
  override name = 'RpcItemError'
}

type RpcItem<T> = { id: number; result?: T | null; error?: { code: number; message: string } }
type FullBlock = { number: Hex; hash: Hex; parentHash: Hex; timestamp: Hex; transactions: RawTransaction[] | Hex[] }

const RETRYABLE_STATUSES = new Set([408, 413, 429, 500, 502, 503, 504])

function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined
  const seconds = Number.parseInt(header, 10)
  if (!Number.isNaN(seconds)) return seconds * 1000
  const at = Date.parse(header)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

/** Results of a parsed batch in request order (ids are positions); an error item throws RpcItemError. */
function resultsOf<T>(text: string, count: number, describe: (index: number) => string): Array<T | null> {
  const items = JSON.parse(text) as RpcItem<T>[] | RpcItem<T>
  const byId = new Map((Array.isArray(items) ? items : [items]).map((item) => [Number(item.id), item]))
  return Array.from({ length: count }, (_, index) => {
    const item = byId.get(index)
    if (!item) throw new RpcItemError(`no answer for ${describe(index)} in the batch`)
    if (item.error) throw new RpcItemError(`${describe(index)}: ${item.error.message} (${item.error.code})`)
    return item.result ?? null
  })
}

/** The same blocks from an ordinary JSON.parse, for responses the scanner gives up on. */
function parseBlockBatch(text: string, numbers: readonly number[], entryPoints: ReadonlySet<string>): ScannedBlock[] {
  const results = resultsOf<FullBlock>(text, numbers.length, (index) => `block ${numbers[index]}`)
  return numbers.map((number, index) => {
    const block = results[index]
    if (!block) throw new BlockNotFoundError(number)
    if (Number.parseInt(block.number, 16) !== number) {
      throw new MismatchedAnswerError(`asked for block ${number}, the node answered block ${Number.parseInt(block.number, 16)}`)
    }
    if (block.transactions.some((tx) => typeof tx === 'string')) throw new RpcItemError(`block ${number} came without transaction bodies`)
    const transactions = block.transactions as RawTransaction[]
    return {
      number,
      hash: block.hash,
      parentHash: block.parentHash,
      timestamp: Number.parseInt(block.timestamp, 16),
      txCount: transactions.length,
      candidates: transactions.filter((tx) => hasMarker(tx.input) || (tx.to !== null && entryPoints.has(tx.to))),
    }
  })
}

function checkedReceipts(text: string, hashes: readonly Hex[]): RawReceipt[] {
  const results = resultsOf<RawReceipt>(text, hashes.length, (index) => `receipt of ${hashes[index]}`)
  return hashes.map((hash, index) => {
    const receipt = results[index]
    if (!receipt) throw new ReceiptNotFoundError(hash)
    if (receipt.transactionHash.toLowerCase() !== hash.toLowerCase()) {
      throw new MismatchedAnswerError(`asked for the receipt of ${hash}, the node answered the receipt of ${receipt.transactionHash}`)
    }
    return receipt
  })
}

export function createBatches(options: BatchOptions) {
  const retryDelayMs = options.retryDelayMs ?? 250

  /**
   * POSTs one batch and returns the body; throws on a non-2xx answer. undici's
   * request API rather than fetch: a batch of full blocks is megabytes, and
   * fetch's web streams copied and decoded it in small steps (about a fifth of
   * the indexer's CPU in the backfill profile).
   */
  async function post(body: string): Promise<string> {
    const response = await request(options.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(options.timeoutMs),
    })
    options.onResponse?.(response.statusCode)
    if (response.statusCode < 200 || response.statusCode >= 300) {
      await response.body.dump().catch(() => {})
      const retryAfter = response.headers['retry-after']
      throw new RpcHttpError(response.statusCode, retryAfterMs(typeof retryAfter === 'string' ? retryAfter : null))
    }
    const chunks: Buffer[] = []
    let length = 0
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      chunks.push(chunk)
      length += chunk.length
    }
    return Buffer.concat(chunks, length).toString('utf8')
  }

  function decode(text: string, numbers: readonly number[], entryPoints: ReadonlySet<string>): ScannedBlock[] {
    try {
      return scanBlockBatch(text, numbers, entryPoints)
    } catch (error) {
      if (!(error instanceof ScanFailed)) throw error
      // an error item, a missing block or an unusual layout: parse it whole (a truncated body throws SyntaxError here)
      return parseBlockBatch(text, numbers, entryPoints)
    }
  }

  function shouldRetry(error: unknown): boolean {
    if (error instanceof BlockNotFoundError || error instanceof ReceiptNotFoundError || error instanceof MismatchedAnswerError) return false
    if (error instanceof RpcHttpError) return RETRYABLE_STATUSES.has(error.status)
    return true // timeouts, resets, unreadable bodies, error items
  }

  /** One batch of calls of `method`, its answer read by `read`, retried with backoff. */
  async function call<T>(method: string, params: unknown[][], read: (text: string) => T): Promise<T> {
    const body = JSON.stringify(params.map((param, id) => ({ jsonrpc: '2.0', id, method, params: param })))
    for (let attempt = 0; ; attempt++) {
      try {
        return read(await post(body))
      } catch (error) {
        if (attempt >= options.retryCount || !shouldRetry(error)) throw error
        const hinted = error instanceof RpcHttpError ? error.retryAfterMs : undefined
        await sleep(hinted ?? retryDelayMs * 2 ** attempt)
      }
    }
  }

  function chunks<T>(items: readonly T[]): T[][] {
    const out: T[][] = []
    for (let start = 0; start < items.length; start += options.batchSize) out.push(items.slice(start, start + options.batchSize))
    return out
  }

  /** Blocks `from`..`to` in batches of `batchSize`, sent concurrently; throws BlockNotFoundError if the node lacks one. */
  async function blocks(from: number, to: number, entryPoints: ReadonlySet<string>): Promise<ScannedBlock[]> {
    const numbers = Array.from({ length: to - from + 1 }, (_, i) => from + i)
    const batches = chunks(numbers).map((batch) =>
      call('eth_getBlockByNumber', batch.map((number) => [numberToHex(number), true]), (text) => decode(text, batch, entryPoints)),
    )
    return (await Promise.all(batches)).flat()
  }

  /** Receipts of the given transactions in batches; throws ReceiptNotFoundError if the node lacks one. */
  async function receipts(hashes: readonly Hex[]): Promise<RawReceipt[]> {
    const batches = chunks(hashes).map((batch) =>
      call('eth_getTransactionReceipt', batch.map((hash) => [hash]), (text) => checkedReceipts(text, batch)),
    )
    return (await Promise.all(batches)).flat()
  }

  return { blocks, receipts }
}
