import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import * as schema from './schema/index.js'

export type Database = PostgresJsDatabase<typeof schema> & { $client: postgres.Sql }
export type Sql = postgres.Sql

export type DatabaseOptions = {
  url: string
  poolSize?: number
  /** Seconds to wait for a connection before a query fails, so an outage surfaces as an error, not a hang. */
  connectTimeoutSeconds?: number
}

export function createDatabase(options: DatabaseOptions): Database {
  const client = postgres(options.url, {
    max: options.poolSize ?? 10,
    connect_timeout: options.connectTimeoutSeconds ?? 5,
    // reconnect attempts at most a second apart: while Postgres is down a waiting query fails within about
    // that (and the API answers 503) instead of queuing behind the default backoff, which grows to 20 s
    backoff: (attempt: number) => Math.min(0.1 * 2 ** attempt, 1),
    idle_timeout: 60,
    onnotice: () => {},
    // no JIT compilation: the planner's cost estimate of a commit statement (thousands of rows through a dozen
    // upserts) passes jit_above_cost, and compiling it cost ~250 ms a statement for nothing in return: the commit
    // bench spent ~20% less PostgreSQL CPU per row without it (BENCHMARKS.md); the API's reads are small
    connection: { jit: 'off' },
  })
  return drizzle(client, { schema }) as Database
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
