import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Hex } from 'viem'
import { createTestDatabase, type TestDatabase } from '../../test/support/services.js'
import { findIndexed } from './index-lookup.js'

/**
 * The attribution rows are keyed by block (drizzle/0023), their suffix rows
 * too (drizzle/0025): a backfill then
 * appends to its key's right edge instead of writing a random leaf per row,
 * which a key led by the transaction hash cost. A lookup by hash must still
 * never scan: a transaction's starts at its suffix row (a hash index),
 * which names the block; a UserOperation's at the rows' partial index.
 */

const RECORDS = 20_000
const txHash = (i: number) => `0x${i.toString(16).padStart(64, '0')}`
const opHash = (i: number) => `0x${(i + 1_000_000).toString(16).padStart(64, '0')}`

describe('lookups by hash on rows keyed by block', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase('lookup_by_key')
    const sql = database.db.$client
    // every tenth record a UserOperation (op 0 of its bundle); each record has two codes
    await sql`
      insert into attributions (chain_id, block_number, block_hash, block_timestamp, tx_hash, tx_index, kind, user_op_index, user_op_hash,
        sender, code, code_status, schema_id, suffix_gas, status)
      select 8453, 1000 + g / 50, '0xb', now(), ${sql.unsafe(`'0x' || lpad(to_hex(g), 64, '0')`)}, g % 50,
        case when g % 10 = 0 then 'userOperation' else 'transaction' end, case when g % 10 = 0 then 0 else -1 end,
        case when g % 10 = 0 then ${sql.unsafe(`'0x' || lpad(to_hex(g + 1000000), 64, '0')`)} end,
        '0x5e', c.code, 'unregistered', 0, 100, case when g % 7 = 0 then 'reverted' else 'success' end
      from generate_series(0, ${RECORDS - 1}) g cross join (values ('alpha'), ('beta')) as c(code)`
    await sql`
      insert into attribution_suffixes (chain_id, tx_hash, user_op_index, block_number, codes, suffix, suffix_bytes)
      select 8453, '0x' || lpad(to_hex(g), 64, '0'), case when g % 10 = 0 then 0 else -1 end, 1000 + g / 50, '{alpha,beta}',
        '0x0180218021802180218021802180218021', 17
      from generate_series(0, ${RECORDS - 1}) g`
    await sql`analyze attributions, attribution_suffixes`
  })
  afterAll(() => database?.drop())

  it('keys the rows by chain and block, and holds no index led by the hash on them', async () => {
    const indexes = await database.db.$client<{ definition: string }[]>`
      select pg_get_indexdef(indexrelid) as definition from pg_index where indrelid = 'attributions'::regclass`
    const definitions = indexes.map(({ definition }) => definition)
    expect(definitions.filter((d) => d.includes('UNIQUE')).sort()).toEqual([
      expect.stringContaining('attributions_block_unique_idx ON public.attributions USING btree (chain_id, block_number, tx_hash, user_op_index, code)'),
      expect.stringContaining('attributions_pkey ON public.attributions USING btree (id)'),
    ])
    expect(definitions.filter((d) => /\((chain_id, )?tx_hash/.test(d))).toEqual([])
    // a UserOperation's hash is looked up by equality only: a hash index
    expect(definitions.filter((d) => d.includes('user_op_hash'))).toEqual([expect.stringContaining('USING hash (user_op_hash) WHERE')])
  })

  it('keys the suffix rows by chain and block too, a transaction found by a hash index of its own suffix rows', async () => {
    const indexes = await database.db.$client<{ definition: string }[]>`
      select pg_get_indexdef(indexrelid) as definition from pg_index where indrelid = 'attribution_suffixes'::regclass`
    expect(indexes.map(({ definition }) => definition).sort()).toEqual([
      expect.stringMatching(/^CREATE INDEX .* USING hash \(tx_hash\) WHERE \(user_op_index = '-1'::integer\)$/),
      expect.stringMatching(/^CREATE UNIQUE INDEX attribution_suffixes_block_pk .* USING btree \(chain_id, block_number, tx_hash, user_op_index\)$/),
    ])
  })

  it('finds a transaction and a UserOperation by hash without scanning either table', async () => {
    const reserved = await database.db.$client.reserve()
    try {
      await reserved`begin`
      const transaction = await findIndexed(reserved, { type: 'transaction', hash: txHash(12_347) as Hex, chainId: 8453 })
      const operation = await findIndexed(reserved, { type: 'userOperation', hash: opHash(12_340) as Hex, chainId: 8453 })
      const missing = await findIndexed(reserved, { type: 'transaction', hash: txHash(RECORDS + 5) as Hex, chainId: 8453 })
      // this transaction's own reads of each table so far: an index scan each, never a sequential one
      const reads = await reserved<{ table: string; seq_scan: number; idx_scan: number }[]>`
        select relname as table, seq_scan::int, idx_scan::int from pg_stat_xact_user_tables
        where relname in ('attributions', 'attribution_suffixes') order by relname`
      await reserved`rollback`
      expect(transaction).toMatchObject({ blockNumber: 1000 + Math.floor(12_347 / 50), transactionHash: txHash(12_347), status: 'success' })
      expect(operation).toMatchObject({ blockNumber: 1000 + Math.floor(12_340 / 50), transactionHash: txHash(12_340), userOpHash: opHash(12_340) })
      expect(missing).toBeUndefined()
      expect(reads.map(({ table, seq_scan }) => ({ table, seq_scan }))).toEqual([
        { table: 'attribution_suffixes', seq_scan: 0 },
        { table: 'attributions', seq_scan: 0 },
      ])
      expect(reads.every(({ idx_scan }) => idx_scan > 0)).toBe(true)
    } finally {
      reserved.release()
    }
  })
})
