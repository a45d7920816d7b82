import { getTableColumns } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
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
