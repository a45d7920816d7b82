import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { inject } from 'vitest'
import { createDatabase, closeDatabase, type Database } from '../../src/db/client.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { createRedis, type Redis } from '../../src/redis/client.js'

export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`
}

/** URL of a database with another name on the same server as `baseUrl`. */
export function databaseUrlNamed(baseUrl: string, name: string): string {
  const url = new URL(baseUrl)
  url.pathname = `/${name}`
  return url.toString()
}

export type TestDatabase = { url: string; name: string; db: Database; drop(): Promise<void> }

/** A fresh, migrated database for one test file; `drop()` removes it. */
export async function createTestDatabase(prefix = 'test'): Promise<TestDatabase> {
  const name = uniqueName(prefix)
  const url = databaseUrlNamed(inject('databaseUrl'), name)
  await migrateDatabase(url)
  const db = createDatabase({ url, poolSize: 5 })
  return {
    url,
    name,
    db,
    async drop() {
      await closeDatabase(db)
      const admin = postgres(databaseUrlNamed(inject('databaseUrl'), 'postgres'), { max: 1, onnotice: () => {} })
      try {
        await admin.unsafe(`drop database if exists "${name}" with (force)`)
      } finally {
        await admin.end({ timeout: 5 })
      }
    },
  }
}

export type TestRedis = { url: string; prefix: string; redis: Redis; cleanup(): Promise<void> }

/** A Redis connection and a key prefix no other test file uses; `cleanup()` deletes the prefix's keys. */
export async function createTestRedis(): Promise<TestRedis> {
  const url = inject('redisUrl')
  const prefix = uniqueName('t')
  const redis = createRedis(url, 'queue')
  return {
    url,
    prefix,
    redis,
    async cleanup() {
      let cursor = '0'
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000)
        if (keys.length > 0) await redis.del(...keys)
        cursor = next
      } while (cursor !== '0')
      redis.disconnect()
    },
  }
}
