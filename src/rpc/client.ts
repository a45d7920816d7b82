import { createPublicClient, custom, numberToHex, type Hex, type PublicClient } from 'viem'
import { createBatches } from './batches.js'
import { BlockNotFoundError, MismatchedAnswerError, ReceiptNotFoundError } from './errors.js'
import { createEndpoint, createEndpointPool, type Endpoint } from './endpoints/endpoint-pool.js'
import type { HealthState } from './endpoints/endpoint-health.js'
import { redactRpcUrl } from './endpoints/endpoint-redact.js'
import { createTransport, type TransportObserver } from './transport/transport.js'
import type { HttpClientKind } from './wire/http-post.js'

export type { ScannedBlock } from './scan/block-scan.js'

/** A block header as JSON-RPC returns it (only the fields the indexer reads). */
export type RawHeader = { number: Hex; hash: Hex; parentHash: Hex; timestamp: Hex }

export type RpcOptions = {
  /** The chain's endpoints (one transport each); `url` alone is one endpoint. */
  urls?: readonly string[]
  url?: string
  /** Per HTTP request; a batch that times out is asked again in smaller batches. */
  timeoutMs: number
  /** Most calls per JSON-RPC batch (and the starting size); the transport shrinks it to what the node accepts. */
  batchSize: number
  /** Most bytes per batch answer, estimated per method from earlier answers (default 10 MiB). */
  batchBytes?: number
  /** Most bytes any one answer may have (default 256 MiB): a node streaming an endless body is cut off there. */
  answerBytes?: number
  /** Requests in flight at the start (default 4) and at most (default 8); adapted AIMD on 429s and slow answers. */
  concurrency?: number
  maxConcurrency?: number
  /** Attempts per call before its error goes up to the caller (default 5). */
  maxAttempts?: number
  retryDelayMs?: number
  /** The HTTP client of http URLs (RPC_HTTP_CLIENT): the socket reader (default) or undici. */
  httpClient?: HttpClientKind
  /** Per endpoint (its redacted label given), what its transport reports. */
  observer?: TransportObserver | ((label: string) => TransportObserver)
  onEndpointState?: (label: string, state: HealthState) => void
  /** The clock of the endpoints' meters and health (cool-downs); a test may move its own. */
  now?: () => number
}

export { BlockNotFoundError, MismatchedAnswerError, ReceiptNotFoundError }

function checkedHeader<T extends RawHeader>(number: number, header: T | null): T | null {
  if (header && Number.parseInt(header.number, 16) !== number) {
    throw new MismatchedAnswerError(`asked for block ${number}, the node answered block ${Number.parseInt(header.number, 16)}`)
  }
  return header
}

/** The endpoints of `options`, each with its own transport. */
function endpointsOf(options: RpcOptions): Endpoint[] {
  const urls = options.urls?.length ? options.urls : options.url ? [options.url] : []
  if (urls.length === 0) throw new Error('createRpc needs at least one URL')
  // with several endpoints a call gives up on one sooner: the pool tries it on the next
  const maxAttempts = urls.length > 1 ? Math.min(options.maxAttempts ?? 5, 2) : (options.maxAttempts ?? 5)
  return urls.map((url) => {
    const label = redactRpcUrl(url)
    const observer = typeof options.observer === 'function' ? options.observer(label) : options.observer
    const transport = createTransport({
      url,
      timeoutMs: options.timeoutMs,
      maxBatchSize: options.batchSize,
      maxBatchBytes: options.batchBytes ?? 10 * 2 ** 20,
      ...(options.answerBytes !== undefined && { maxAnswerBytes: options.answerBytes }),
      concurrency: options.concurrency ?? 4,
      maxConcurrency: options.maxConcurrency ?? 8,
      maxAttempts,
      ...(options.retryDelayMs !== undefined && { retryDelayMs: options.retryDelayMs }),
      ...(options.httpClient && { httpClient: options.httpClient }),
      ...(observer && { observer }),
    })
    return createEndpoint(url, transport, options.now)
  })
}

/** How long the head waits for slower endpoints once one answered. */
const HEAD_GRACE_MS = 250

/**
 * JSON-RPC access for the indexer over the chain's endpoints
 * (endpoint-pool.ts), each with its own adaptive transport (transport.ts):
 * full blocks and receipts in batches (batches.ts), headers and the head.
 * Every work goes to the endpoint that would finish it soonest and moves to
 * another when it fails or the endpoint lacks the block yet. `client` is a
 * viem client over the same pool, with viem's own retries off.
 */
export function createRpc(options: RpcOptions) {
  const pool = createEndpointPool(endpointsOf(options), {
    ...(options.onEndpointState && { onStateChange: (endpoint: Endpoint, state: HealthState) => options.onEndpointState!(endpoint.label, state) }),
  })
  const request = <T>(method: string, params: unknown[] = []) => pool.run(1, (endpoint) => endpoint.transport.call<T>(method, params))
  const client: PublicClient = createPublicClient({
    transport: custom({ request: ({ method, params }) => request(method, (params ?? []) as unknown[]) }, { retryCount: 0 }),
  })
  const batches = createBatches(pool, { timeoutMs: options.timeoutMs })

  async function chainId(): Promise<number> {
    return Number.parseInt(await request<Hex>('eth_chainId'), 16)
  }

  /** The highest head among the healthy endpoints: one that lags does not hold the chain back. */
  async function latestHeader(): Promise<RawHeader> {
    const headers = await pool.askHealthy(async (endpoint) => {
      const header = await endpoint.transport.call<RawHeader | null>('eth_getBlockByNumber', ['latest', false])
      if (!header) throw new Error('node returned no latest block')
      return header
    }, HEAD_GRACE_MS)
    return headers.reduce((best, header) => (Number.parseInt(header.number, 16) > Number.parseInt(best.number, 16) ? header : best))
  }

  async function blockNumber(): Promise<number> {
    return Number.parseInt((await latestHeader()).number, 16)
  }

  /** Header of block `number`, or null when no endpoint has it (yet). */
  function header(number: number): Promise<RawHeader | null> {
    return pool.run(
      1,
      async (endpoint) => checkedHeader(number, await endpoint.transport.call<RawHeader | null>('eth_getBlockByNumber', [numberToHex(number), false])),
      { behind: (found) => found === null },
    )
  }

  /** Headers of several blocks in batches, null where no endpoint has one: a lagging endpoint's gaps are asked of the others. */
  async function headers(numbers: readonly number[]): Promise<(RawHeader | null)[]> {
    const found = new Array<RawHeader | null>(numbers.length).fill(null)
    const asked = new Set<Endpoint>()
    await pool.run(
      numbers.length,
      async (endpoint) => {
        asked.add(endpoint)
        const missing = numbers.flatMap((number, i) => (found[i] ? [] : [{ number, i }]))
        const answers = await endpoint.transport.callMany({
          method: 'eth_getBlockByNumber',
          params: missing.map(({ number }) => [numberToHex(number), false]),
          readResult: (value, position) => checkedHeader(missing[position]!.number, value as RawHeader | null),
        })
        answers.forEach((answer, k) => (found[missing[k]!.i] = answer))
        return found
      },
      { behind: (all) => all.some((one) => one === null) },
    )
    return found
  }

  return {
    client,
    pool,
    /** The first endpoint's transport (its operating point for progress lines and tests). */
    transport: pool.first.transport,
    request,
    chainId,
    /** Every endpoint must serve this chain; see endpoint-pool.ts requireChainId. */
    requireChainId: pool.requireChainId,
    blockNumber,
    latestHeader,
    header,
    headers,
    endpointStates: pool.states,
    blocks: batches.blocks,
    receipts: batches.receipts,
  }
}

export type Rpc = ReturnType<typeof createRpc>
