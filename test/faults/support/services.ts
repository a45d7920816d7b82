import postgres from 'postgres'
import { closeDatabase, createDatabase, type Database } from '../../../src/db/client.js'
import { migrateDatabase } from '../../../src/db/migrate.js'
import { startRedisServer, type RedisServer } from '../../support/redis-server.js'
import { startPostgresCluster, type PostgresCluster } from './postgres-cluster.js'

/** A fault test file's own PostgreSQL cluster and Redis server, never the machine's shared ones. */
export type PrivateServices = { postgres: PostgresCluster; redis: RedisServer; stop(): Promise<void> }

export async function startPrivateServices(): Promise<PrivateServices> {
  const [cluster, redis] = await Promise.all([startPostgresCluster(), startRedisServer()])
  return {
    postgres: cluster,
    redis,
    async stop() {
      await redis.stop()
      await cluster.destroy()
    },
  }
}

export type TrialDatabase = { name: string; url: string; db: Database; drop(): Promise<void> }

/** A fresh, migrated database on the private cluster, for one trial. */
export async function createTrialDatabase(cluster: PostgresCluster, name: string, poolSize = 4): Promise<TrialDatabase> {
  const url = cluster.url(name)
  await migrateDatabase(url)
  const db = createDatabase({ url, poolSize })
  return {
    name,
    url,
    db,
    async drop() {
      await closeDatabase(db).catch(() => {})
      const admin = postgres(cluster.url('postgres'), { max: 1, onnotice: () => {} })
      try {
        await admin.unsafe(`drop database if exists "${name}" with (force)`)
      } finally {
        await admin.end({ timeout: 5 })
      }
    },
  }
}
