import { createPublicClient, custom, numberToHex, type Hex, type PublicClient } from 'viem'
import { createBatches } from './batches.js'
import { BlockNotFoundError, MismatchedAnswerError, ReceiptNotFoundError } from './errors.js'
import { createTransport, type TransportObserver } from './transport.js'

export type { ScannedBlock } from './block-scan.js'

/** A block header as JSON-RPC returns it (only the fields the indexer reads). */
export type RawHeader = { number: Hex; hash: Hex; parentHash: Hex; timestamp: Hex }

export type RpcOptions = {
  url: string
  /** Per HTTP request; a batch that times out is asked again in smaller batches. */
  timeoutMs: number
  /** Most calls per JSON-RPC batch (and the starting size); the transport shrinks it to what the node accepts. */
  batchSize: number
  /** Most bytes per batch answer, estimated per method from earlier answers (default 10 MiB). */
  batchBytes?: number
  /** Requests in flight at the start (default 4) and at most (default 8); adapted AIMD on 429s and slow answers. */
  concurrency?: number
  maxConcurrency?: number
  /** Attempts per call before its error goes up to the caller (default 5). */
  maxAttempts?: number
  retryDelayMs?: number
  observer?: TransportObserver
}

export { BlockNotFoundError, MismatchedAnswerError, ReceiptNotFoundError }

function checkedHeader<T extends RawHeader>(number: number, header: T | null): T | null {
  if (header && Number.parseInt(header.number, 16) !== number) {
    throw new MismatchedAnswerError(`asked for block ${number}, the node answered block ${Number.parseInt(header.number, 16)}`)
  }
  return header
}

/**
 * JSON-RPC access for the indexer, every call through one adaptive transport
 * (transport.ts): full blocks and receipts in batches (batches.ts), headers
 * and the head as single calls or batches. `client` is a viem client over
 * the same transport, with viem's own retries off.
 */
export function createRpc(options: RpcOptions) {
  const transport = createTransport({
    url: options.url,
    timeoutMs: options.timeoutMs,
    maxBatchSize: options.batchSize,
    maxBatchBytes: options.batchBytes ?? 10 * 2 ** 20,
    concurrency: options.concurrency ?? 4,
    maxConcurrency: options.maxConcurrency ?? 8,
    maxAttempts: options.maxAttempts ?? 5,
    ...(options.retryDelayMs !== undefined && { retryDelayMs: options.retryDelayMs }),
    ...(options.observer && { observer: options.observer }),
  })
  const client: PublicClient = createPublicClient({
    transport: custom({ request: ({ method, params }) => transport.call(method, (params ?? []) as unknown[]) }, { retryCount: 0 }),
  })
  const batches = createBatches(transport)

  const request = <T>(method: string, params: unknown[] = []) => transport.call<T>(method, params)

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

  /** Headers of several blocks in batches, null where the node lacks one. */
  function headers(numbers: readonly number[]): Promise<(RawHeader | null)[]> {
    return transport.callMany({
      method: 'eth_getBlockByNumber',
      params: numbers.map((number) => [numberToHex(number), false]),
      readResult: (value, position) => checkedHeader(numbers[position]!, value as RawHeader | null),
    })
  }

  return { client, transport, request, chainId, blockNumber, header, headers, blocks: batches.blocks, receipts: batches.receipts }
}

export type Rpc = ReturnType<typeof createRpc>
