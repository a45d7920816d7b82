import type { Address } from 'viem'
import type { Database } from '../db/client.js'

export type Candidate = { code: string; wallet: Address }

type Waiting = Candidate & { settle: (inserted: boolean) => void; fail: (error: unknown) => void }

/**
 * New registrations share their commit. A new wallet is one durable INSERT,
 * so its cost is PostgreSQL's WAL flush; while one insert is in flight, the
 * candidates that arrive wait and go together in the next multi-row insert,
 * paying one flush between them. There is no timer: a lone registration goes
 * at once, and a group is only ever what arrived during the previous round trip.
 *
 * Each candidate learns whether its own (code, wallet) pair was stored; a
 * pair left out conflicted on the code or on the wallet, as with a single
 * insert, and the caller goes on as it would have.
 */
export function createGroupedInsert(db: Database, maxRows = 500) {
  const waiting: Waiting[] = []
  let flushing = false

  async function insertGroup(group: readonly Waiting[]): Promise<void> {
    try {
      const rows = await db.$client<{ code: string; wallet_address: string }[]>`
        insert into builder_codes (code, wallet_address)
        select * from unnest(${group.map((c) => c.code)}::text[], ${group.map((c) => c.wallet)}::text[])
        on conflict do nothing
        returning code, wallet_address`
      const stored = new Set(rows.map((row) => `${row.code} ${row.wallet_address}`))
      // a pair asked twice in one group (the same wallet registering twice at once) was stored once: the first asker created it
      for (const candidate of group) candidate.settle(stored.delete(`${candidate.code} ${candidate.wallet}`))
    } catch (error) {
      // the whole statement failed (e.g. the database is down): every candidate in it sees the error
      for (const candidate of group) candidate.fail(error)
    }
  }

  async function flush(): Promise<void> {
    flushing = true
    try {
      while (waiting.length > 0) await insertGroup(waiting.splice(0, maxRows))
    } finally {
      flushing = false
    }
  }

  /** Resolves true when this exact pair was stored, false when its code or wallet was taken. */
  return function insert(candidate: Candidate): Promise<boolean> {
    return new Promise((settle, fail) => {
      waiting.push({ ...candidate, settle, fail })
      if (!flushing) void flush()
    })
  }
}
