import { fileURLToPath } from 'node:url'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import { createDatabase, closeDatabase } from './client.js'

export const migrationsFolder = fileURLToPath(new URL('../../drizzle', import.meta.url))

/** Arbitrary constant: serializes migrations when several processes start at once. */
const MIGRATION_LOCK_KEY = 8021_0001

/** Creates the database named in `url` when it does not exist yet. */
export async function ensureDatabaseExists(url: string): Promise<void> {
  const target = new URL(url)
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''))
  if (!name) return
  const maintenance = new URL(url)
  maintenance.pathname = '/postgres'
  const sql = postgres(maintenance.toString(), { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    const [row] = await sql`select 1 as present from pg_database where datname = ${name}`
    if (row) return
    await sql.unsafe(`create database "${name.replaceAll('"', '""')}"`).catch((error: { code?: string }) => {
      // 42P04 duplicate_database: another process created it first
      if (error.code !== '42P04') throw error
    })
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/** Creates the database if needed and applies every migration in `drizzle/` (or in `folder`, a bench's older copy of it). */
export async function migrateDatabase(url: string, folder: string = migrationsFolder): Promise<void> {
  await ensureDatabaseExists(url)
  const db = createDatabase({ url, poolSize: 1 })
  try {
    await db.$client`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`
    try {
      await migrate(db, { migrationsFolder: folder })
    } finally {
      await db.$client`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`
    }
  } finally {
    await closeDatabase(db)
  }
}
