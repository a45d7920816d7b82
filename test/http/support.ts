import { Registry } from 'prom-client'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { uniqueName, type TestDatabase, type TestRedis } from '../support/services.js'

/**
 * APIs with their own limits, each with its own counters (a fresh Redis
 * prefix) and /metrics, behind the trusted proxy 127.0.0.1 so a test names
 * its clients with X-Forwarded-For. `close()` stops every one started.
 */
export function limitedApis(services: () => { database: TestDatabase; redis: TestRedis }) {
  const apis: TestApi[] = []
  return {
    async start(env: Record<string, string>, deps: Parameters<typeof startTestApi>[0]['deps'] = {}): Promise<TestApi> {
      const { database, redis } = services()
      const api = await startTestApi({
        db: database.db,
        databaseUrl: database.url,
        redisUrl: redis.url,
        env: { QUEUE_PREFIX: `${redis.prefix}-${uniqueName('l')}`, TRUST_PROXY: '127.0.0.1', ...env },
        deps: { metricsRegistry: new Registry(), ...deps },
      })
      apis.push(api)
      return api
    },
    async close() {
      for (const api of apis.splice(0)) await api.close()
    },
  }
}

/** `http_limit_refusals_total` by limit, as /metrics serves it. */
export async function refusals(api: TestApi): Promise<Record<string, number>> {
  const text = (await request(`${api.url}/metrics`)).body as string
  const counts: Record<string, number> = {}
  for (const match of text.matchAll(/^http_limit_refusals_total\{limit="(\w+)"\} (\d+)$/gm)) counts[match[1]!] = Number(match[2])
  return counts
}

/** Headers of a request from `ip`, forwarded by the trusted proxy. */
export const from = (ip: string) => ({ 'x-forwarded-for': ip })
