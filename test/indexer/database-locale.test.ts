import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { closeDatabase, createDatabase, type Database } from '../../src/db/client.js'
import { commitRange } from '../../src/store/commit.js'
import { cutRange, senderAddress } from '../support/ranges.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'

/**
 * What the commit costs PostgreSQL does not depend on the database's locale
 * (BENCHMARKS.md, "The database's locale"): identifiers compare byte by
 * byte whatever collation the database was created with, and a commit
 * statement of many rows is planned for them, never run with a generic
 * plan that guessed their number.
 */
let database: TestDatabase

beforeAll(async () => {
  database = await createTestDatabase('locale')
})

afterAll(async () => {
  await database?.drop()
})

/** The text columns that hold words for people, not identifiers: they keep the database's collation. */
const HUMAN_TEXT = [
  'malformed_suffixes.reason',
  'notification_projects.name',
  'notifications.message',
  'notifications.target_path',
  'notifications.title',
  'ranges.last_error',
]

describe('the database locale', () => {
  it('leaves every identifier column comparing as "C", and only words for people on the database collation', async () => {
    const columns = await database.db.$client<{ column: string; collation: string | null }[]>`
      select c.table_name || '.' || c.column_name as column, c.collation_name as collation
      from information_schema.columns c
      where c.table_schema = 'public' and (c.data_type = 'text' or c.udt_name = '_text')
      order by 1`
    const onDatabaseCollation = columns.filter(({ collation }) => collation !== 'C').map(({ column }) => column)
    expect(onDatabaseCollation).toEqual(HUMAN_TEXT)
    // the ones that matter most, named: what every commit indexes and joins on
    const collationOf = new Map(columns.map(({ column, collation }) => [column, collation]))
    for (const column of ['attributions.tx_hash', 'attributions.code', 'attributions.sender', 'code_day_sender_refs.sender', 'builder_codes.code']) {
      expect(collationOf.get(column), column).toBe('C')
    }
  })

  it('plans a commit of many rows for its rows, after any number of small ones that may share a cached plan', async () => {
    // one connection, so the prepared statement and its plan statistics are those of the commits below
    const single: Database = createDatabase({ url: database.url, poolSize: 1 })
    const commitOf = async (range: number, rows: number) => {
      const fromBlock = range * 1_000 + 1
      const items = Array.from({ length: rows }, (_, i) => ({
        tx: `plan${range}-${i}`,
        code: `code${i % 3}`,
        sender: senderAddress(i + 1),
        timestamp: 1_760_000_000 + fromBlock,
        block: fromBlock + (i % 10),
      }))
      const outcome = await commitRange(single, await cutRange(single, { chainId: 77, fromBlock, toBlock: fromBlock + 9, branch: 'a', items }))
      expect(outcome).toEqual({ committed: true, inserted: rows })
    }
    const plans = async () => {
      const [counts] = await single.$client<{ generic: number; custom: number }[]>`
        select coalesce(sum(generic_plans), 0)::int as generic, coalesce(sum(custom_plans), 0)::int as custom
        from pg_prepared_statements
        -- this query's own text names the commit's insert too
        where statement like '%insert into attributions%' and statement not like '%pg_prepared_statements%'`
      return counts!
    }
    try {
      // ranges at the head, 1 to 8 rows: PostgreSQL settles on its generic plan, costed for about that many
      for (let range = 0; range < 8; range++) await commitOf(range, range + 1)
      const small = await plans()
      expect(small.generic + small.custom).toBe(8)
      expect(small.generic).toBeGreaterThan(0)
      // a backfill's batches, thousands of rows on a busy chain: each planned for its own
      for (let range = 8; range < 11; range++) await commitOf(range, 150 + range)
      expect(await plans()).toEqual({ generic: small.generic, custom: small.custom + 3 })
    } finally {
      await closeDatabase(single)
    }
  })
})
