import { createHash, randomBytes } from 'node:crypto'
import type { Redis } from './client.js'

/**
 * Sliding-window log per key in one sorted set: drop entries older than the
 * window, admit the request when fewer than `max` remain, and report when the
 * oldest entry leaves the window. Time comes from the Redis server so every
 * API instance agrees on it. Rejected requests are not recorded, so a client
 * that keeps hammering is admitted again as soon as its old requests age out.
 */
const SLIDING_WINDOW_SCRIPT = `
local key = KEYS[1]
local max = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local member = ARGV[3]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
local allowed = 0
if count < max then
  redis.call('ZADD', key, now, member)
  count = count + 1
  allowed = 1
end
redis.call('PEXPIRE', key, window)
local resetMs = window
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
if oldest[2] then resetMs = tonumber(oldest[2]) + window - now end
return { allowed, count, resetMs }
`
const SCRIPT_SHA = createHash('sha1').update(SLIDING_WINDOW_SCRIPT).digest('hex')

export type RateLimitDecision = {
  allowed: boolean
  /** False when Redis could not be asked and the request was admitted blind (`whenUnavailable: 'admit'`). */
  counted: boolean
  limit: number
  remaining: number
  /** Milliseconds until a slot frees up (the oldest counted request leaves the window). */
  resetMs: number
}

export type RateLimiterOptions = {
  redis: Redis
  /** Redis key prefix; the counter lives at `<prefix>:<name>:<client>`. */
  prefix: string
  /** Requests sharing this name share one counter per client. */
  name: string
  max: number
  windowMs: number
  /** Where an outage is reported (pino or Fastify's logger). */
  logger: { warn(details: object, message: string): void }
  /**
   * What a Redis outage means for this limit. `admit`: every request passes
   * uncounted (the limit guards nothing worth a refusal while Redis is down).
   * `count-locally`: this process counts on its own, with the same limit, until
   * Redis answers again (the limit guards something that costs: with N API
   * instances a client gets at most N times the limit meanwhile).
   */
  whenUnavailable?: 'admit' | 'count-locally'
}

/** How often an ongoing Redis outage is logged, so a flood of requests does not flood the log. */
const OUTAGE_LOG_INTERVAL_MS = 10_000

/** Clients one process remembers while it counts locally; the oldest are forgotten past this. */
const MAX_LOCAL_CLIENTS = 10_000

/**
 * Fixed windows per client, in this process's memory: the stand-in while
 * Redis cannot be asked. Coarser than the sliding log (a client may pass
 * twice the limit across a window boundary) and bounded in memory.
 */
export function createLocalWindows(options: { max: number; windowMs: number; maxClients?: number; now?: () => number }) {
  const now = options.now ?? Date.now
  const maxClients = options.maxClients ?? MAX_LOCAL_CLIENTS
  const windows = new Map<string, { start: number; count: number }>()

  function hit(client: string): RateLimitDecision {
    const at = now()
    let window = windows.get(client)
    if (!window || at - window.start >= options.windowMs) {
      windows.delete(client)
      // a Map iterates in insertion order: the first key is the client counted longest ago
      if (windows.size >= maxClients) windows.delete(windows.keys().next().value!)
      window = { start: at, count: 0 }
      windows.set(client, window)
    }
    const allowed = window.count < options.max
    if (allowed) window.count++
    const resetMs = window.start + options.windowMs - at
    return { allowed, counted: true, limit: options.max, remaining: Math.max(0, options.max - window.count), resetMs }
  }

  return { hit, size: () => windows.size }
}

/**
 * A rate limiter whose counters live in Redis, so every API instance on the
 * same Redis enforces one limit. When Redis cannot be reached it logs a
 * warning and either admits the request or counts locally
 * (`whenUnavailable`): an outage of the limiter never takes its routes down.
 */
export function createRateLimiter(options: RateLimiterOptions) {
  let lastOutageLog = 0
  const local = options.whenUnavailable === 'count-locally' ? createLocalWindows(options) : undefined
  // Each counted request is one member of the sorted set, so members must be unique across
  // instances: a random prefix per limiter and a counter (a random draw per request costs a syscall).
  const memberPrefix = randomBytes(8).toString('hex')
  let memberCount = 0

  async function runScript(key: string): Promise<[number, number, number]> {
    const args = [String(options.max), String(options.windowMs), `${memberPrefix}:${(memberCount++).toString(36)}`]
    try {
      return (await options.redis.evalsha(SCRIPT_SHA, 1, key, ...args)) as [number, number, number]
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      return (await options.redis.eval(SLIDING_WINDOW_SCRIPT, 1, key, ...args)) as [number, number, number]
    }
  }

  /** Counts one request from `client` and says whether it may proceed. */
  async function hit(client: string): Promise<RateLimitDecision> {
    const key = `${options.prefix}:${options.name}:${client}`
    try {
      const [allowed, count, resetMs] = await runScript(key)
      return { allowed: allowed === 1, counted: true, limit: options.max, remaining: Math.max(0, options.max - count), resetMs }
    } catch (error) {
      const now = Date.now()
      if (now - lastOutageLog >= OUTAGE_LOG_INTERVAL_MS) {
        lastOutageLog = now
        options.logger.warn(
          { err: error, limiter: options.name },
          local ? 'rate limiter unavailable, counting in this process' : 'rate limiter unavailable, admitting requests',
        )
      }
      if (local) return local.hit(client)
      return { allowed: true, counted: false, limit: options.max, remaining: options.max, resetMs: options.windowMs }
    }
  }

  return { hit }
}

export type RateLimiter = ReturnType<typeof createRateLimiter>
