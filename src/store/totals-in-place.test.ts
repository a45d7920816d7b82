import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../test/support/services.js'

/**
 * Commits add to the same totals rows over and over (one upsert per key and
 * commit), which PostgreSQL does in place (a HOT update: no index entry
 * written) only when no index holds a column the update changes and the
 * page has room (drizzle/0022: ~15 → ~6 µs an upsert). An index that
 * INCLUDEs a counter, or a table back at fillfactor 100, would silently
 * bring the cost back: this says which.
 */
const COUNTED: Record<string, readonly string[]> = {
  code_daily_totals: ['success_count', 'reverted_count', 'suffix_gas'],
  code_hourly_totals: ['success_count', 'reverted_count', 'suffix_gas'],
  chain_daily_totals: ['attributions', 'success_count', 'reverted_count'],
  chain_hourly_totals: ['attributions', 'success_count', 'reverted_count'],
  code_daily_sender_counts: ['senders'],
  sender_window_counts: ['senders'],
  code_sender_window_counts: ['senders'],
}

describe('totals rows are updated in place', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase('totals_in_place')
  })
  afterAll(() => database?.drop())

  it('no index of a totals table holds a counter, and each leaves room in its pages', async () => {
    const sql = database.db.$client
    for (const [table, counters] of Object.entries(COUNTED)) {
      const indexed = await sql<{ index: string; column: string }[]>`
        select i.indexrelid::regclass::text as index, a.attname as column
        from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
        where i.indrelid = ${table}::regclass and a.attname = any(${counters as string[]})`
      expect(indexed, table).toEqual([])
      const [options] = await sql<{ reloptions: string[] | null }[]>`select reloptions from pg_class where oid = ${table}::regclass`
      expect(options!.reloptions, table).toContain('fillfactor=70')
    }
  })

  it('an upsert of a day’s totals is a HOT update', async () => {
    await database.db.$client.begin(async (tx) => {
      const upsert = () => tx`
        insert into code_daily_totals as t (code, registry, chain_id, day, kind, success_count, reverted_count, suffix_gas)
        values ('hot_test', 'canonical', 8453, '2025-01-01', 'transaction', 1, 0, 10)
        on conflict (code, registry, chain_id, day, kind) do update set success_count = t.success_count + excluded.success_count`
      await upsert()
      await upsert()
      // this transaction's own counts, read before it ends
      const [counts] = await tx<{ updated: number; hot: number }[]>`
        select pg_stat_get_xact_tuples_updated('code_daily_totals'::regclass)::int as updated,
               pg_stat_get_xact_tuples_hot_updated('code_daily_totals'::regclass)::int as hot`
      expect(counts).toEqual({ updated: 1, hot: 1 })
    })
  })
})
