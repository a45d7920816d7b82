import { Redis, type RedisOptions } from 'ioredis'

export { Redis }

export type RedisRole =
  /** Request path: fail fast while Redis is down so callers can answer 503 instead of hanging. */
  | 'request'
  /** BullMQ workers and blocking connections: BullMQ requires unlimited retries and handles reconnects. */
  | 'queue'

export function createRedis(url: string, role: RedisRole, extra: RedisOptions = {}): Redis {
  const base: RedisOptions = {
    connectTimeout: 3_000,
    // reconnect forever, backing off to 2 s: an outage must heal without a restart
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
    lazyConnect: false,
  }
  const byRole: RedisOptions =
    role === 'queue'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 2_000 }
  const redis = new Redis(url, { ...base, ...byRole, ...extra })
  // errors are reported through failed commands; an unhandled 'error' event would crash the process
  redis.on('error', () => {})
  return redis
}

/** True when Redis answers PING within the timeout. */
export async function pingRedis(redis: Redis, timeoutMs = 2_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs)
  })
  try {
    return await Promise.race([redis.ping().then((reply) => reply === 'PONG'), timeout])
  } catch {
    return false
  } finally {
    clearTimeout(timer)
  }
}
