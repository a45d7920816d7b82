import { createPublicClient, webSocket } from 'viem'
import type { Sql } from '../db/client.js'
import type { Logger } from '../logger.js'
import type { IndexerMetrics } from '../metrics/indexer.js'
import type { RawHeader, Rpc } from '../rpc/client.js'
import { recordHead } from '../store/chain-state.js'

/**
 * The latest block header: the highest among the chain's healthy endpoints
 * (rpc/client.ts), so one endpoint behind the others neither holds the head
 * back nor moves it down.
 */
export function latestHeader(rpc: Pick<Rpc, 'latestHeader'>): Promise<RawHeader> {
  return rpc.latestHeader()
}

/** Head minus the confirmation depth: the highest block indexed. */
export const targetOf = (head: number, confirmations: number) => head - confirmations

/**
 * Reads the node's head (the head gauge follows it) and starts recording it
 * in `chain_state`: the record goes alongside the rest of the tick, which
 * needs only the number; `recorded` settles when it is written (a database
 * error is the tick's to throw).
 */
export async function trackHead({ sql, rpc, chainId, metrics }: { sql: Sql; rpc: Pick<Rpc, 'latestHeader'>; chainId: number; metrics?: IndexerMetrics | undefined }) {
  const header = await latestHeader(rpc)
  const number = Number.parseInt(header.number, 16)
  metrics?.head(chainId, number)
  const recorded = recordHead(sql, chainId, number, header.hash)
  // awaited by the tick; never an unhandled rejection meanwhile
  recorded.catch(() => {})
  return { number, hash: header.hash, parentHash: header.parentHash, recorded }
}

/**
 * The wait between two ticks: `intervalMs`, cut short by `wake()` (a new
 * head). A wake while no wait is under way (the follower is in a tick) ends
 * the next wait at once: the head pushed may have come after the tick read
 * its own, and would otherwise wait a whole interval (POLL_INTERVAL_MS) or
 * the next push.
 */
export function createTicker(intervalMs: number) {
  let wake: (() => void) | undefined
  // the first wake not yet answered by a tick (performance.now()), for the `wake` stage
  let wokenAt: number | undefined
  return {
    async wait() {
      if (wokenAt !== undefined) return
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      wake = undefined
    },
    wake() {
      wokenAt ??= performance.now()
      wake?.()
    },
    /** How long ago the wake this tick answers came (ms); undefined when the tick was not woken. Clears it. */
    takeWake(): number | undefined {
      const at = wokenAt
      wokenAt = undefined
      return at === undefined ? undefined : performance.now() - at
    },
  }
}

/** Subscribes to newHeads over the websocket at `wsUrl`, if any; returns the unsubscribe. */
export function watchNewHeads(wsUrl: string | undefined, onHead: () => void, logger: Logger): (() => void) | undefined {
  if (!wsUrl) return undefined
  const client = createPublicClient({ transport: webSocket(wsUrl, { reconnect: true }) })
  return client.watchBlockNumber({
    emitOnBegin: false,
    // subscribe to newHeads over the socket instead of polling it
    poll: false as never,
    onBlockNumber: onHead,
    onError: (error) => logger.warn({ err: error.message }, 'websocket head subscription error; polling continues'),
  })
}
