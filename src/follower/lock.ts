import postgres from 'postgres'

/**
 * One active follower per chain: a session-level Postgres advisory lock held
 * on a session of the follower's own. If the process dies, its connection
 * closes and the lock is released, so a waiting follower takes over. The
 * follower does all its writes on this same session, so a follower that lost
 * its connection (and with it the lock) cannot write anything.
 */
export type ChainLock = { sql: postgres.ReservedSql; release(): Promise<void> }

export class LockLostError extends Error {
  override name = 'LockLostError'
}

const lockKey = (chainId: number) => `attribution-follower:${chainId}`

/**
 * The lock's session: a client of one connection of its own rather than a
 * connection reserved from the shared pool. postgres.js (3.4.9) does not get
 * reserved connections through the server going away: a reserve() issued
 * while Postgres is down can still be waiting long after it is back (found by
 * the fault suite, which then saw the follower stop for good). Once this
 * session's connection closes, the lock is gone with it, and every later
 * statement throws LockLostError instead of running on a new connection that
 * does not hold the lock.
 */
function openLockSession(url: string, chainId: number) {
  let lost = false
  const client = postgres(url, {
    max: 1,
    connect_timeout: 5,
    // the session is the lock: never recycled under it
    max_lifetime: null,
    idle_timeout: 0,
    onnotice: () => {},
    onclose: () => {
      lost = true
    },
  })
  const sql = new Proxy(client, {
    apply(target, thisArg, args) {
      if (lost) throw new LockLostError(`follower lock of chain ${chainId} was lost with its connection`)
      return Reflect.apply(target, thisArg, args)
    },
  })
  const close = () => client.end({ timeout: 1 }).catch(() => {})
  // the follower's code takes a reserved connection; this session is one, released by closing it
  return { sql: Object.assign(sql, { release: () => void close() }) as unknown as postgres.ReservedSql, close, isLost: () => lost }
}

/** Tries once; undefined when another follower holds the chain. */
export async function tryAcquireChainLock(databaseUrl: string, chainId: number): Promise<ChainLock | undefined> {
  const session = openLockSession(databaseUrl, chainId)
  try {
    const [row] = await session.sql<{ locked: boolean }[]>`select pg_try_advisory_lock(hashtext(${lockKey(chainId)})) as locked`
    if (!row?.locked) {
      await session.close()
      return undefined
    }
  } catch (error) {
    await session.close()
    throw error
  }
  return {
    sql: session.sql,
    async release() {
      try {
        if (!session.isLost()) await session.sql`select pg_advisory_unlock(hashtext(${lockKey(chainId)}))`
      } catch {
        // the connection is gone, and the lock with it
      } finally {
        await session.close()
      }
    },
  }
}

/** Throws LockLostError unless this connection's session still holds the chain's lock. */
export async function assertLockHeld(lock: ChainLock, chainId: number): Promise<void> {
  const [row] = await lock.sql<{ held: boolean }[]>`
    select exists (
      select 1 from pg_locks
      where locktype = 'advisory' and granted and pid = pg_backend_pid()
        and objid = (hashtext(${lockKey(chainId)})::bigint & 4294967295)::oid
    ) as held`
  if (!row?.held) throw new LockLostError(`follower lock of chain ${chainId} was lost`)
}
