import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import type postgres from 'postgres'
import { connectPostgres, type DatabaseOptions } from './connect.js'
import * as schema from './schema/index.js'

export type { DatabaseOptions, Sql } from './connect.js'
export type Database = PostgresJsDatabase<typeof schema> & { $client: postgres.Sql }

export function createDatabase(options: DatabaseOptions): Database {
  return drizzle(connectPostgres(options), { schema }) as Database
}

export async function closeDatabase(db: Database): Promise<void> {
  await db.$client.end({ timeout: 5 })
}

/** True when the database answers a trivial query within the timeout. */
export async function pingDatabase(db: Database, timeoutMs = 2_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs)
  })
  try {
    return await Promise.race([db.$client`select 1`.then(() => true as const), timeout])
  } catch {
    return false
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Makes the statements of the transaction `sql` is in planned for their own
 * parameters, each time (`plan_cache_mode`, for this transaction only): the
 * rollback, and a commit of more than a few rows (commit.ts).
 *
 * The driver prepares every statement, and after five runs PostgreSQL may
 * keep one generic plan for all later ones, costed without the parameters'
 * values. A commit statement reads its rows from arrays of a few rows or
 * twenty thousand, so a generic plan has no idea of its sizes: on the
 * commit bench, once the identifier columns compared as "C", the sixth
 * statement on took a generic plan that joined two CTEs in a nested loop,
 * 11.5 s a statement against 1.4 s (BENCHMARKS.md, "The database's
 * locale"). Planning each one anew did not raise the commit bench's
 * PostgreSQL CPU per row; the API's small reads keep their cached plans.
 */
export function planForParameters(sql: postgres.TransactionSql | postgres.ReservedSql): Promise<unknown> {
  // sent at once (`execute`), not when awaited: pipelined with the transaction's next queries, it goes out first
  return sql`set local plan_cache_mode = force_custom_plan`.execute()
}
