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

/** Reads the node's head, records it (`chain_state`, the head gauge) and returns its number. */
export async function trackHead({ sql, rpc, chainId, metrics }: { sql: Sql; rpc: Pick<Rpc, 'latestHeader'>; chainId: number; metrics?: IndexerMetrics | undefined }) {
  const header = await latestHeader(rpc)
  const number = Number.parseInt(header.number, 16)
  await recordHead(sql, chainId, number, header.hash)
  metrics?.head(chainId, number)
  return number
}

/**
 * The wait between two ticks: `intervalMs`, cut short by `wake()` (a new
 * head). A wake while no wait is under way is a no-op.
 */
export function createTicker(intervalMs: number) {
  let wake: (() => void) | undefined
  return {
    async wait() {
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
      wake?.()
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
