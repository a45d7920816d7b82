import { getTableColumns } from 'drizzle-orm'
import postgres from 'postgres'
import { describe, expect, inject, it } from 'vitest'
import { attributions, attributionSuffixes } from '../db/schema/index.js'
import { AGGREGATED_COLUMNS, ATTRIBUTION_COLUMNS, attributionInsert, SUFFIX_COLUMNS, suffixInsert } from './attribution-columns.js'

/**
 * The column tables against the drizzle schema, at run time (the types
 * check the keys at compile time): a column added to the schema and not to
 * the table, or the other way round, fails here, as does a list the commit
 * uses that no longer matches the table.
 */
describe('the store’s column tables match the schema', () => {
  const stored = (table: Parameters<typeof getTableColumns>[0]) =>
    Object.entries(getTableColumns(table))
      .filter(([, column]) => !column.generatedIdentity?.type)
      .map(([key]) => key)

  it('attributions: every stored column has a value, and nothing else does', () => {
    expect(Object.keys(ATTRIBUTION_COLUMNS).sort()).toEqual(stored(attributions).sort())
  })

  it('attribution_suffixes: the same', () => {
    expect(Object.keys(SUFFIX_COLUMNS).sort()).toEqual(stored(attributionSuffixes).sort())
  })

  it('the insert lists are the tables’ columns in table order, with the schema’s types', () => {
    const columns = Object.values(getTableColumns(attributions)).filter((column) => !column.generatedIdentity?.type)
    expect(attributionInsert.names).toEqual(columns.map((column) => column.name))
    expect(attributionInsert.arrayTypes).toEqual(columns.map((column) => `${column.getSQLType()}[]`))
    expect(suffixInsert.names).toEqual(Object.values(getTableColumns(attributionSuffixes)).map((column) => column.name))
    expect(suffixInsert.selectList).toContain('"codes"::text[]')
  })

  it('the aggregates read the columns they group and sum by', () => {
    expect(AGGREGATED_COLUMNS).toEqual([
      'chain_id', 'block_number', 'block_timestamp', 'tx_hash', 'kind', 'user_op_index', 'sender', 'code',
      'registry_chain_id', 'registry_address', 'suffix_gas', 'status',
    ])
  })
})

describe('array literals', () => {
  it('PostgreSQL reads back every value as it was: quotes, backslashes, NULL as text, empty, non-ASCII, braces', async () => {
    const codes = ['a"b', 'c\\d', 'NULL', 'null', '', 'é,}{', ' x ', '🙂']
    const records = [
      { txHash: '0xab', userOpIndex: -1, attribution: { codes, suffix: '0x00', suffixBytes: 1 } },
      { txHash: '0xcd', userOpIndex: 3, attribution: { codes: ['ok'], suffix: '0xff', suffixBytes: 1 } },
    ] as never[]
    const literals = suffixInsert.arrays([{ chainId: 8453, sources: records }])
    const sql = postgres(inject('databaseUrl'), { max: 1, onnotice: () => {} })
    try {
      const casts = literals.map((literal, i) => sql`${literal}::${sql.unsafe(suffixInsert.arrayTypes[i]!)}`).reduce((a, b) => sql`${a}, ${b}`)
      const rows = await sql`select ${sql.unsafe(suffixInsert.selectList)} from unnest(${casts}) as u(${sql.unsafe(suffixInsert.names.map((n) => `"${n}"`).join(', '))})`
      expect(rows.map((row) => ({ ...row }))).toEqual([
        { chain_id: 8453, tx_hash: '0xab', user_op_index: -1, codes, suffix: '0x00', suffix_bytes: 1 },
        { chain_id: 8453, tx_hash: '0xcd', user_op_index: 3, codes: ['ok'], suffix: '0xff', suffix_bytes: 1 },
      ])
    } finally {
      await sql.end({ timeout: 5 })
    }
  })
})
