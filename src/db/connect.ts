import postgres from 'postgres'

export type Sql = postgres.Sql

export type DatabaseOptions = {
  url: string
  poolSize?: number
  /** Seconds to wait for a connection before a query fails, so an outage surfaces as an error, not a hang. */
  connectTimeoutSeconds?: number
}

/**
 * The service's PostgreSQL pool, without drizzle: client.ts's createDatabase wraps it, and
 * `attribution validate`, which only reads two tables, uses it as it is (drizzle and the schema
 * are over a hundred modules, a good part of that command's start).
 */
export function connectPostgres(options: DatabaseOptions): Sql {
  return postgres(options.url, {
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
}
