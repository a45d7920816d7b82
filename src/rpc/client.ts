import { createPublicClient, http, numberToHex, type Hex, type PublicClient } from 'viem'
import { createBatches } from './batches.js'
import { BlockNotFoundError, MismatchedAnswerError, ReceiptNotFoundError } from './errors.js'

export type { ScannedBlock } from './block-scan.js'

/** A block header as JSON-RPC returns it (only the fields the indexer reads). */
export type RawHeader = { number: Hex; hash: Hex; parentHash: Hex; timestamp: Hex }

export type RpcOptions = {
  url: string
  /** Per HTTP request; a timed-out request is retried by viem with backoff. */
  timeoutMs: number
  /** Calls issued in the same tick are sent as one JSON-RPC batch of at most this many. */
  batchSize: number
  /** viem retries 429 (honouring Retry-After), 5xx, timeouts and unreadable bodies this many times. */
  retryCount?: number
  /** Called for every HTTP response; the metrics count non-2xx answers. */
  onResponse?: (status: number) => void
}

export { BlockNotFoundError, MismatchedAnswerError, ReceiptNotFoundError }

function checkedHeader<T extends RawHeader>(number: number, header: T | null): T | null {
  if (header && Number.parseInt(header.number, 16) !== number) {
    throw new MismatchedAnswerError(`asked for block ${number}, the node answered block ${Number.parseInt(header.number, 16)}`)
  }
  return header
}

/**
 * JSON-RPC access for the indexer. Full blocks and receipts go through
 * batches.ts (blocks read by a scanner that parses only the transactions that
 * matter); every other call goes through viem's `client.request`, which returns the node's
 * raw JSON (no per-field formatting) and does the transport work — batching,
 * timeouts, retries with backoff and Retry-After.
 */
export function createRpc(options: RpcOptions) {
  const client: PublicClient = createPublicClient({
    transport: http(options.url, {
      batch: { batchSize: options.batchSize, wait: 0 },
      // a batch of 50 full blocks easily passes viem's 10 MiB default, and the
      // streaming size check costs ~18% over reading the body whole
      maxResponseBodySize: false,
      timeout: options.timeoutMs,
      retryCount: options.retryCount ?? 4,
      retryDelay: 250,
      onFetchResponse: options.onResponse ? (response) => options.onResponse!(response.status) : undefined,
    }),
  })

  const batches = createBatches({
    url: options.url,
    timeoutMs: options.timeoutMs,
    batchSize: options.batchSize,
    retryCount: options.retryCount ?? 4,
    onResponse: options.onResponse,
  })

  const request = <T>(method: string, params: unknown[] = []) =>
    client.request({ method: method as never, params: params as never }) as Promise<T>

  async function chainId(): Promise<number> {
    return Number.parseInt(await request<Hex>('eth_chainId'), 16)
  }

  async function blockNumber(): Promise<number> {
    return Number.parseInt(await request<Hex>('eth_blockNumber'), 16)
  }

  /** Header of block `number`, or null when the node does not have it (yet). */
  async function header(number: number): Promise<RawHeader | null> {
    return checkedHeader(number, await request<RawHeader | null>('eth_getBlockByNumber', [numberToHex(number), false]))
  }

  /** Headers of several blocks in one batch, null where the node lacks one. */
  function headers(numbers: readonly number[]): Promise<(RawHeader | null)[]> {
    return Promise.all(numbers.map(header))
  }

  return { client, request, chainId, blockNumber, header, headers, blocks: batches.blocks, receipts: batches.receipts }
}

export type Rpc = ReturnType<typeof createRpc>
