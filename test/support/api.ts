import { loadConfig, type Config } from '../../src/config/env.js'
import type { Database } from '../../src/db/client.js'
import { createServer, type Server, type ServerDeps } from '../../src/http/server.js'
import { createLogger } from '../../src/logger.js'
import { createRedis, type Redis } from '../../src/redis/client.js'

export type TestApi = { url: string; server: Server; config: Config; redis: Redis; close(): Promise<void> }

/**
 * The real HTTP server on an ephemeral port, over the given test database and
 * Redis. `env` overrides configuration; `deps` overrides collaborators.
 */
export async function startTestApi(options: {
  db: Database
  databaseUrl: string
  redisUrl: string
  env?: Record<string, string>
  deps?: Partial<ServerDeps>
}): Promise<TestApi> {
  const config = loadConfig({
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    PORT: '0',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DEVNET: 'false',
    // tests read right after writing; the commit-invalidated cache is tested on its own (stream.test.ts)
    ANALYTICS_CACHE_MS: '0',
    // every test client is 127.0.0.1 and the default prefix's counters are shared by every file on this Redis:
    // the per-client budgets are tested on their own (test/http/client-limits.test.ts)
    REGISTER_RATE_LIMIT_MAX: '1000000',
    VALIDATE_RATE_LIMIT_MAX: '1000000',
    VALIDATE_RPC_MAX: '1000000',
    ...options.env,
  })
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'test-api' })
  const redis = options.deps?.redis ?? createRedis(config.REDIS_URL, 'request')
  const server = await createServer({ config, db: options.db, redis, logger, ...options.deps })
  const url = await server.listen({ host: '127.0.0.1', port: 0 })
  return {
    url,
    server,
    config,
    redis,
    async close() {
      await server.close()
      if (!options.deps?.redis) redis.disconnect()
    },
  }
}

/** fetch + JSON body, for tests that read status and body together. */
export async function request(
  url: string,
  init: { method?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = { ...init.headers }
  let body: string | undefined = init.rawBody
  if (init.body !== undefined) {
    body = JSON.stringify(init.body)
    headers['content-type'] ??= 'application/json'
  } else if (init.rawBody !== undefined) {
    headers['content-type'] ??= 'application/json'
  }
  const response = await fetch(url, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    // non-JSON bodies (HTML pages) are returned as text
  }
  return { status: response.status, body: parsed, headers: response.headers }
}
