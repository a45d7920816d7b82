import { createServer } from 'node:net'
import { hostname } from 'node:os'
import postgres from 'postgres'
import { errorCode, hostPort, StartupError } from './startup-error.js'

/**
 * Checks made before start-up does anything that cannot be undone. A
 * devnet start resets the index of the previous devnet run in its
 * database, so everything that would make this process exit anyway (a
 * taken port, another live instance on the database) must be found before
 * that reset, never after it.
 */

/** Why a port cannot be listened on, in words an operator acts on. */
function portProblem(code: string): string {
  if (code === 'EADDRINUSE') return 'is already in use (EADDRINUSE): stop what listens there or choose a free port'
  if (code === 'EACCES') return 'may not be listened on by this user (EACCES): choose a port above 1023'
  if (code === 'EADDRNOTAVAIL') return 'names an address this machine does not have (EADDRNOTAVAIL): check HOST'
  return `cannot be listened on (${code})`
}

/** The one-line refusal for a port setting: `PORT: 127.0.0.1:3000 is already in use …`. */
export function portError(setting: string, host: string, port: number, error: unknown): StartupError {
  return new StartupError(`${setting}: ${host}:${port} ${portProblem(errorCode(error))}`)
}

/**
 * Binds `host:port` and lets it go at once: what the real listener will
 * meet a moment later. Port 0 (any free port) always succeeds. A port taken
 * between this check and the real listen still fails there, with the same
 * one-line message (see `listenError`).
 */
export async function checkPortFree(setting: string, host: string, port: number): Promise<void> {
  if (port === 0) return
  const server = createServer()
  try {
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen({ port, host, exclusive: true }, resolve))
  } catch (error) {
    throw portError(setting, host, port, error)
  }
  await new Promise((resolve) => server.close(resolve))
}

/** The advisory lock every devnet instance holds on its database for as long as it runs. */
const DEVNET_LOCK_KEY = 'attribution-devnet'

/** What names this process to an operator who finds its lock: shown by the instance it refuses. */
export function instanceName(command: string, details: Record<string, string | number | undefined>): string {
  const parts = Object.entries(details)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${value}`)
  // application_name is cut at 63 bytes by PostgreSQL: the most telling parts first
  return [`attribution ${command}`, `pid=${process.pid}`, `host=${hostname()}`, ...parts].join(' ')
}

export type DevnetLock = {
  /** Renames the holder once more is known (the ports actually listened on). */
  describe(name: string): Promise<void>
  release(): Promise<void>
}

/**
 * Holds the database's devnet lock on a session of its own until released
 * (or the process dies and its connection with it). A devnet start resets
 * the previous devnet run's index; with the lock, only a database no live
 * devnet instance uses is ever reset. Refused with one line naming the
 * holder (its command, pid, host and ports, from its session's
 * application_name) when another instance has it.
 */
export async function acquireDevnetLock(databaseUrl: string, name: string): Promise<DevnetLock> {
  const session = postgres(databaseUrl, {
    max: 1,
    connect_timeout: 5,
    idle_timeout: 0,
    max_lifetime: null,
    onnotice: () => {},
    connection: { application_name: name },
  })
  const close = () => session.end({ timeout: 1 }).catch(() => {})
  try {
    const [row] = await session<{ locked: boolean }[]>`select pg_try_advisory_lock(hashtext(${DEVNET_LOCK_KEY})) as locked`
    if (row?.locked) {
      return {
        describe: async (name) => {
          await session`select set_config('application_name', ${name.slice(0, 63)}, false)`.catch(() => {})
        },
        release: close,
      }
    }
    const [holder] = await session<{ pid: number; name: string | null; since: Date | null }[]>`
      select a.pid, nullif(a.application_name, '') as name, a.backend_start as since
      from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where l.locktype = 'advisory' and l.granted and l.objid = (hashtext(${DEVNET_LOCK_KEY})::bigint & 4294967295)::oid
      limit 1`
    const who = holder ? `${holder.name ?? 'a process'} (PostgreSQL backend ${holder.pid}, since ${holder.since?.toISOString()})` : 'another instance'
    throw new StartupError(
      `DATABASE_URL: this database's devnet index is in use by ${who}; starting a devnet here would reset it: stop that instance, or give this one its own DATABASE_URL`,
    )
  } catch (error) {
    await close()
    throw error
  }
}

/**
 * One-shot commands that read the index (validate, admin) on a database that
 * does not exist yet or was never migrated: one line saying what to run,
 * rather than a failed query's stack.
 */
export async function checkMigrated(databaseUrl: string, table: string): Promise<void> {
  const sql = postgres(databaseUrl, { max: 1, connect_timeout: 3, idle_timeout: 1, onnotice: () => {} })
  try {
    await checkTable(sql, databaseUrl, table)
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {})
  }
}

const MIGRATE_ADVICE = 'run `npx attribution migrate` (or `npm run migrate`; `npm start` migrates too)'
const databaseName = (databaseUrl: string) => new URL(databaseUrl).pathname.slice(1) || 'postgres'

async function checkTable(sql: postgres.Sql, databaseUrl: string, table: string): Promise<void> {
  try {
    const [row] = await sql<{ found: string | null }[]>`select to_regclass(${table})::text as found`
    if (!row?.found) throw new StartupError(`DATABASE_URL: database "${databaseName(databaseUrl)}" is not migrated (it has no ${table} table): ${MIGRATE_ADVICE}`)
  } catch (error) {
    if (errorCode(error) === '3D000') throw new StartupError(`DATABASE_URL: database "${databaseName(databaseUrl)}" does not exist yet: ${MIGRATE_ADVICE}`)
    throw error
  }
}

/**
 * checkDatabaseOnce's and checkMigrated's checks (cli.ts), on the connection the command then works
 * with: one connection to PostgreSQL instead of three, each a server process started and a
 * handshake, a good part of `attribution validate`'s time on a busy machine. The same lines: a
 * server that cannot be reached or refuses the login is worded as start-up's single attempt words
 * it (startup.ts waitForDependencies), a missing database or table as checkMigrated.
 */
export async function checkDatabaseReady(sql: postgres.Sql, databaseUrl: string, table: string): Promise<void> {
  try {
    await checkTable(sql, databaseUrl, table)
  } catch (error) {
    if (error instanceof StartupError) throw error
    const code = errorCode(error)
    const where = `DATABASE_URL: postgres at ${hostPort(databaseUrl, 5432)}`
    // 28xxx: authentication or authorization (startup.ts's PermanentProblem); anything else: not reachable
    if (code.startsWith('28')) throw new StartupError(`${where} refused the connection (${code}): ${(error as Error).message}`)
    throw new StartupError(`unreachable: ${where} (${code})`)
  }
}
