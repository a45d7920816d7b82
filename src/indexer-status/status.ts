import type { Sql } from '../db/client.js'
import { indexingState, type ChainIndexingState } from '../store/indexing-state.js'
import type { PublishedEndpointState } from './endpoints.js'

/** A chain's indexing state (store/indexing-state.ts) as the API shows it: times as ISO text, and the lag. */
export type ChainStatus = {
  chainId: number
  headBlock: number | null
  headUpdatedAt: string | null
  indexedBlock: number | null
  lagBlocks: number | null
  /** Seconds between now and the indexed block's timestamp while behind; 0 when caught up. */
  lagSeconds: number | null
  rangesPending: number
  /** Pending ranges that failed at least STUCK_RANGE_ATTEMPTS times. */
  rangesStuck: number
  lastMinute: ChainIndexingState['lastMinute']
  lastError: (Omit<NonNullable<ChainIndexingState['lastError']>, 'at'> & { at: string }) | null
  /** The chain's RPC endpoints as the fetching processes last saw them (URLs redacted); null when that could not be read. */
  endpoints: PublishedEndpointState[] | null
}

export type IndexerStatus = { stuckAfterAttempts: number; chains: ChainStatus[] }

/**
 * Per chain: head, checkpoint, lag in blocks and in seconds, pending and
 * stuck ranges, the last minute's throughput and the latest failure, from
 * the store's indexing state (one query).
 */
export async function readIndexerStatus(
  sql: Sql,
  options: {
    chainIds: readonly number[]
    stuckAfterAttempts: number
    now?: Date
    /** Per chain, its endpoints' published state (indexer-status/endpoints.ts); undefined: not known here. */
    endpoints?: ReadonlyMap<number, PublishedEndpointState[]> | undefined
  },
): Promise<IndexerStatus> {
  const now = options.now ?? new Date()
  const states = await indexingState(sql, { chainIds: options.chainIds, stuckAfterAttempts: options.stuckAfterAttempts, now })
  return {
    stuckAfterAttempts: options.stuckAfterAttempts,
    chains: states.map((state) => chainStatus(state, now, options.endpoints ? (options.endpoints.get(state.chainId) ?? []) : null)),
  }
}

function chainStatus(state: ChainIndexingState, now: Date, endpoints: PublishedEndpointState[] | null): ChainStatus {
  const { head, indexed } = state
  const lagBlocks = head !== null && indexed !== null ? Math.max(0, head - indexed) : null
  // behind: how old the newest indexed block is (pruned blocks leave it unknown)
  const lagSeconds =
    lagBlocks === 0 ? 0 : lagBlocks !== null && state.indexedAt ? Math.max(0, Math.round((now.getTime() - state.indexedAt.getTime()) / 1000)) : null
  return {
    chainId: state.chainId,
    headBlock: head,
    headUpdatedAt: state.headUpdatedAt?.toISOString() ?? null,
    indexedBlock: indexed,
    lagBlocks,
    lagSeconds,
    rangesPending: state.pendingRanges,
    rangesStuck: state.stuckRanges,
    lastMinute: state.lastMinute,
    lastError: state.lastError ? { ...state.lastError, at: state.lastError.at.toISOString() } : null,
    endpoints,
  }
}
