import { createHash, randomBytes } from 'node:crypto'
import type { Redis } from '../redis/client.js'

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
  /** False when Redis could not be asked and the request was admitted blind. */
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
}

/** How often an ongoing Redis outage is logged, so a flood of requests does not flood the log. */
const OUTAGE_LOG_INTERVAL_MS = 10_000

/**
 * A rate limiter whose counters live in Redis, so every API instance on the
 * same Redis enforces one limit. When Redis cannot be reached it fails open
 * (admits the request and logs a warning): an outage of the limiter should
 * not take the notification API down with it.
 */
export function createRateLimiter(options: RateLimiterOptions) {
  let lastOutageLog = 0
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
        options.logger.warn({ err: error, limiter: options.name }, 'rate limiter unavailable, admitting requests')
      }
      return { allowed: true, counted: false, limit: options.max, remaining: options.max, resetMs: options.windowMs }
    }
  }

  return { hit }
}

export type RateLimiter = ReturnType<typeof createRateLimiter>
