import type { Redis } from '../redis/client.js'
import type { EndpointState } from '../rpc/endpoints/endpoint-pool.js'

/**
 * The RPC endpoints' state, shared through Redis: the processes that fetch
 * (follower, workers) know it, the API that answers /v1/indexer/status may
 * be another process. Each fetching process writes its view of every
 * endpoint every few seconds (one hash per chain, a field per endpoint,
 * URLs redacted); the latest view of an endpoint wins, and a view older
 * than STALE_MS (its process stopped) is not shown.
 */

export const PUBLISH_EVERY_MS = 5_000
const STALE_MS = 30_000

export type PublishedEndpointState = EndpointState & { at: string }

const keyOf = (prefix: string, chainId: number) => `${prefix}:rpc-endpoints:${chainId}`

export async function publishEndpointStates(redis: Redis, prefix: string, chainId: number, states: readonly EndpointState[], now = new Date()): Promise<void> {
  if (states.length === 0) return
  const key = keyOf(prefix, chainId)
  const fields = states.flatMap((state) => [state.url, JSON.stringify({ ...state, at: now.toISOString() })])
  await redis.multi().hset(key, ...fields).pexpire(key, STALE_MS).exec()
}

/** Per chain, the endpoints' latest published state (empty when no fetching process published lately). */
export async function readEndpointStates(redis: Redis, prefix: string, chainIds: readonly number[], now = new Date()): Promise<Map<number, PublishedEndpointState[]>> {
  const byChain = new Map<number, PublishedEndpointState[]>()
  await Promise.all(
    chainIds.map(async (chainId) => {
      const fields = await redis.hgetall(keyOf(prefix, chainId))
      const states = Object.values(fields)
        .map((value) => JSON.parse(value) as PublishedEndpointState)
        .filter((state) => now.getTime() - Date.parse(state.at) < STALE_MS)
        .sort((a, b) => a.url.localeCompare(b.url))
      byChain.set(chainId, states)
    }),
  )
  return byChain
}
