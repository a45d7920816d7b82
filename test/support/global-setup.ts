import { execFileSync } from 'node:child_process'
import type { TestProject } from 'vitest/node'

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string
    redisUrl: string
  }
}

const LOCAL_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres'
const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379'

function dockerAvailable(): boolean {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 5_000 })
    return true
  } catch {
    return false
  }
}

/**
 * Where the tests find PostgreSQL and Redis: the URLs in the environment
 * when given (TEST_DATABASE_URL/DATABASE_URL, TEST_REDIS_URL/REDIS_URL),
 * containers started by testcontainers when Docker is available, and the
 * machine's local services otherwise. Each test file then makes its own
 * database and Redis key prefix from these.
 */
export default async function setup(project: TestProject) {
  let databaseUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL
  let redisUrl = process.env.TEST_REDIS_URL ?? process.env.REDIS_URL
  const stops: Array<() => Promise<unknown>> = []

  if ((!databaseUrl || !redisUrl) && dockerAvailable()) {
    const { GenericContainer, Wait } = await import('testcontainers')
    if (!databaseUrl) {
      const postgres = await new GenericContainer('postgres:16-alpine')
        .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
        .withExposedPorts(5432)
        .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
        .start()
      stops.push(() => postgres.stop())
      databaseUrl = `postgres://postgres@${postgres.getHost()}:${postgres.getMappedPort(5432)}/postgres`
    }
    if (!redisUrl) {
      const redis = await new GenericContainer('redis:7-alpine')
        .withCommand(['redis-server', '--maxmemory-policy', 'noeviction'])
        .withExposedPorts(6379)
        .start()
      stops.push(() => redis.stop())
      redisUrl = `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`
    }
  }

  project.provide('databaseUrl', databaseUrl ?? LOCAL_DATABASE_URL)
  project.provide('redisUrl', redisUrl ?? LOCAL_REDIS_URL)
  return async () => {
    for (const stop of stops) await stop()
  }
}
