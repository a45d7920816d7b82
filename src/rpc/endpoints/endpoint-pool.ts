import { BlockNotFoundError, ReceiptNotFoundError, ReceiptsOfAnotherBlockError } from '../errors.js'
import { createEndpointHealth, type EndpointHealth, type HealthState } from './endpoint-health.js'
import { createEndpointMeter, type EndpointMeter } from './endpoint-meter.js'
import { redactRpcUrl } from './endpoint-redact.js'
import type { Transport } from '../transport/transport.js'

/**
 * The RPC endpoints of one chain, and which one does each piece of work.
 *
 * Every endpoint has its own transport (its own operating point, learned
 * limits and retries), a meter (endpoint-meter.ts) and a health state
 * (endpoint-health.ts). A work — a range's blocks, a set of receipts, a
 * header — goes to the healthy endpoint that would finish it soonest: the
 * one with the fewest items outstanding per item/s it has delivered. Work
 * thus spreads in proportion to measured throughput, and a fast endpoint
 * is not starved by a slow one's queue.
 *
 * A work that fails on one endpoint is done again on another; a range fails
 * only when every endpoint failed it. "Not there yet" (a block or receipt a
 * lagging endpoint lacks) also moves the work on, but does not make the
 * endpoint sick: it is behind, not broken.
 */

export type Endpoint = {
  url: string
  /** The URL as shown anywhere: logs, status, metric labels (redactRpcUrl). */
  label: string
  transport: Transport
  meter: EndpointMeter
  health: EndpointHealth
}

export type EndpointState = {
  url: string
  state: HealthState
  /** Items (blocks, receipts, headers) per busy second, and answer bytes per busy second; null until measured. */
  itemsPerSecond: number | null
  bytesPerSecond: number | null
  items: number
  errors: number
  failuresInRow: number
  lastError: string | null
  /** What the transport runs at now, when it says: requests in flight allowed and the block batch size. */
  concurrency: number | null
  blockBatchSize: number | null
}

/**
 * Whether an error is no fault of the endpoint: it has not got the block (or
 * receipt) yet, or the chain moved between two calls. The work moves on; the
 * endpoint stays healthy.
 */
export function isLag(error: unknown): boolean {
  return error instanceof BlockNotFoundError || error instanceof ReceiptNotFoundError || error instanceof ReceiptsOfAnotherBlockError
}

export function createEndpoint(url: string, transport: Transport, now: () => number = Date.now): Endpoint {
  return { url, label: redactRpcUrl(url), transport, meter: createEndpointMeter(now), health: createEndpointHealth(now) }
}

export function createEndpointPool(endpoints: readonly Endpoint[], options: { onStateChange?: (endpoint: Endpoint, state: HealthState) => void } = {}) {
  if (endpoints.length === 0) throw new Error('an endpoint pool needs at least one endpoint')
  const outstanding = new Map<Endpoint, number>(endpoints.map((endpoint) => [endpoint, 0]))

  function capacityOf(endpoint: Endpoint): number {
    const measured = endpoint.meter.read().itemsPerSecond
    if (measured !== undefined) return Math.max(measured, 1e-3)
    // not measured yet: as good as the best known, so that it is tried and measured
    const known = endpoints.map((other) => other.meter.read().itemsPerSecond).filter((value) => value !== undefined)
    return known.length ? Math.max(...known) : 1
  }

  /** Once known, the chain every endpoint must serve: a probe checks it, so an endpoint that comes back as another chain's stays out. */
  let expectedChainId: number | undefined

  /** The probe's question: the chain id once it is known (cheap, and it catches an endpoint that changed chains). */
  async function probe(endpoint: Endpoint): Promise<void> {
    if (expectedChainId === undefined) {
      await endpoint.transport.call('eth_blockNumber')
      return
    }
    const served = Number.parseInt(await endpoint.transport.call<string>('eth_chainId'), 16)
    if (served !== expectedChainId) throw new Error(`serves chain ${served}, not chain ${expectedChainId}`)
  }

  /** Sends the one probe of a sick endpoint whose cool-down is over. */
  function probeIfDue(endpoint: Endpoint) {
    if (!endpoint.health.probeDue()) return
    endpoint.health.probing()
    probe(endpoint).then(
      () => setState(endpoint, () => endpoint.health.succeeded()),
      (error: unknown) => setState(endpoint, () => endpoint.health.failed(messageOf(error, endpoint))),
    )
  }

  /**
   * Checks that every endpoint serves `chainId`: one that serves another is
   * an error (two chains' blocks in one index); one that does not answer is
   * kept out until its probe — which from now on asks its chain id — answers.
   */
  async function requireChainId(chainId: number): Promise<void> {
    expectedChainId = chainId
    const answers = await Promise.all(
      endpoints.map((endpoint) =>
        endpoint.transport.call<string>('eth_chainId').then(
          (id) => ({ endpoint, served: Number.parseInt(id, 16) }),
          (error: unknown) => ({ endpoint, error }),
        ),
      ),
    )
    for (const answer of answers) {
      if ('served' in answer && answer.served !== chainId) {
        throw new WrongChainError(`the RPC at ${answer.endpoint.label} serves chain ${answer.served}, but it is listed among the endpoints of chain ${chainId}`)
      }
      if ('error' in answer) {
        const message = `chain id not checked yet: ${messageOf(answer.error, answer.endpoint)}`
        setState(answer.endpoint, () => answer.endpoint.health.failed(message))
      }
    }
  }

  function setState(endpoint: Endpoint, change: () => void) {
    const before = endpoint.health.state
    change()
    if (endpoint.health.state !== before) options.onStateChange?.(endpoint, endpoint.health.state)
  }

  /** The endpoint to give `items` items to, among those not in `tried`: healthy ones first, the sick only when none is. */
  function choose(items: number, tried: ReadonlySet<Endpoint>): Endpoint | undefined {
    for (const endpoint of endpoints) probeIfDue(endpoint)
    const open = endpoints.filter((endpoint) => !tried.has(endpoint))
    const healthy = open.filter((endpoint) => endpoint.health.usable())
    // every endpoint sick: work still goes somewhere (the one that failed least recently in a row), never refused
    const candidates = healthy.length ? healthy : open.sort((a, b) => a.health.failuresInRow - b.health.failuresInRow).slice(0, 1)
    let best: Endpoint | undefined
    let bestFinish = Infinity
    for (const endpoint of candidates) {
      const finish = (outstanding.get(endpoint)! + items) / capacityOf(endpoint)
      if (finish < bestFinish) {
        best = endpoint
        bestFinish = finish
      }
    }
    return best
  }

  /**
   * Does `work` on the best endpoint, and again on the next when it fails,
   * until one succeeds or every endpoint was tried. `itemsOf` says how much a
   * result delivered (for the meter); a result `behind` says was not all
   * there (a lagging endpoint) and moves on like an error, without blame.
   */
  async function run<T>(
    items: number,
    work: (endpoint: Endpoint) => Promise<T>,
    judge: { bytesOf?: (result: T) => number; behind?: (result: T) => boolean } = {},
  ): Promise<T> {
    const tried = new Set<Endpoint>()
    let lastError: unknown
    let lastBehind: { value: T } | undefined
    for (let endpoint = choose(items, tried); endpoint; endpoint = choose(items, tried)) {
      tried.add(endpoint)
      outstanding.set(endpoint, outstanding.get(endpoint)! + items)
      endpoint.meter.started()
      try {
        const result = await work(endpoint)
        endpoint.meter.finished({ items, bytes: judge.bytesOf?.(result) ?? 0 })
        if (endpoint.health.state !== 'healthy') setState(endpoint, () => endpoint.health.succeeded())
        if (judge.behind?.(result)) {
          lastBehind = { value: result }
          continue
        }
        return result
      } catch (error) {
        endpoint.meter.finished('failed')
        if (!isLag(error)) setState(endpoint, () => endpoint.health.failed(messageOf(error, endpoint)))
        lastError = error
      } finally {
        outstanding.set(endpoint, outstanding.get(endpoint)! - items)
      }
    }
    if (lastBehind) return lastBehind.value
    throw lastError
  }

  /**
   * Asks every usable endpoint the same question at once (the head); the
   * answers that came within `graceMs` of the first, at least one. An
   * endpoint that does not answer in time is not waited for.
   */
  async function askHealthy<T>(ask: (endpoint: Endpoint) => Promise<T>, graceMs: number): Promise<T[]> {
    for (const endpoint of endpoints) probeIfDue(endpoint)
    const usable = endpoints.filter((endpoint) => endpoint.health.usable())
    const asked = usable.length ? usable : endpoints
    const answers: T[] = []
    let lastError: unknown
    await new Promise<void>((resolve) => {
      let pending = asked.length
      let graceTimer: NodeJS.Timeout | undefined
      const settle = () => {
        if (--pending === 0) {
          clearTimeout(graceTimer)
          resolve()
        }
      }
      for (const endpoint of asked) {
        ask(endpoint).then(
          (answer) => {
            answers.push(answer)
            if (endpoint.health.state !== 'healthy') setState(endpoint, () => endpoint.health.succeeded())
            graceTimer ??= setTimeout(resolve, graceMs)
            settle()
          },
          (error: unknown) => {
            lastError = error
            setState(endpoint, () => endpoint.health.failed(messageOf(error, endpoint)))
            settle()
          },
        )
      }
    })
    if (answers.length === 0) throw lastError
    return answers
  }

  function states(): EndpointState[] {
    return endpoints.map((endpoint) => {
      const reading = endpoint.meter.read()
      const point = operatingPointOf(endpoint.transport)
      return {
        url: endpoint.label,
        state: endpoint.health.state,
        itemsPerSecond: reading.itemsPerSecond === undefined ? null : round(reading.itemsPerSecond),
        bytesPerSecond: reading.bytesPerSecond === undefined ? null : Math.round(reading.bytesPerSecond),
        items: reading.items,
        errors: reading.errors,
        failuresInRow: endpoint.health.failuresInRow,
        lastError: endpoint.health.lastError ?? null,
        ...point,
      }
    })
  }

  return { endpoints, run, askHealthy, states, requireChainId, first: endpoints[0]! }
}

export class WrongChainError extends Error {
  override name = 'WrongChainError'
}

/** The transport's operating point when it exposes one (its internals are another module's to change). */
function operatingPointOf(transport: Transport): { concurrency: number | null; blockBatchSize: number | null } {
  const exposed = transport as Partial<{ concurrency: number; batchSize: (method: string) => number | undefined }>
  const concurrency = typeof exposed.concurrency === 'number' ? exposed.concurrency : null
  const size = typeof exposed.batchSize === 'function' ? exposed.batchSize('eth_getBlockByNumber(full)') : undefined
  return { concurrency, blockBatchSize: typeof size === 'number' ? size : null }
}

const round = (value: number) => Math.round(value * 10) / 10

/** An error's first line for the status, with the endpoint's own URL (should a message quote it) redacted. */
function messageOf(error: unknown, endpoint: Endpoint): string {
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0]!
  return message.replaceAll(endpoint.url, endpoint.label).slice(0, 300)
}

export type EndpointPool = ReturnType<typeof createEndpointPool>
