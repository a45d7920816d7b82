import { getTableColumns } from 'drizzle-orm'
import postgres from 'postgres'
import { describe, expect, inject, it } from 'vitest'
import { attributions, attributionSuffixes } from '../db/schema/index.js'
import { AGGREGATED_COLUMNS, ATTRIBUTION_COLUMNS, attributionInsert, isoOfSeconds, type AttributionRow, SUFFIX_COLUMNS, suffixInsert } from './attribution-columns.js'

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
      { txHash: '0xab', userOpIndex: -1, blockNumber: 7, attribution: { codes, suffix: '0x00', suffixBytes: 1 } },
      { txHash: '0xcd', userOpIndex: 3, blockNumber: 8, attribution: { codes: ['ok'], suffix: '0xff', suffixBytes: 1 } },
    ] as never[]
    const literals = suffixInsert.arrays([{ chainId: 8453, sources: records }])
    const sql = postgres(inject('databaseUrl'), { max: 1, onnotice: () => {} })
    try {
      const casts = literals.map((literal, i) => sql`${literal}::${sql.unsafe(suffixInsert.arrayTypes[i]!)}`).reduce((a, b) => sql`${a}, ${b}`)
      const rows = await sql`select ${sql.unsafe(suffixInsert.selectList)} from unnest(${casts}) as u(${sql.unsafe(suffixInsert.names.map((n) => `"${n}"`).join(', '))})`
      expect(rows.map((row) => ({ ...row }))).toEqual([
        { chain_id: 8453, tx_hash: '0xab', user_op_index: -1, block_number: '7', codes, suffix: '0x00', suffix_bytes: 1 },
        { chain_id: 8453, tx_hash: '0xcd', user_op_index: 3, block_number: '8', codes: ['ok'], suffix: '0xff', suffix_bytes: 1 },
      ])
    } finally {
      await sql.end({ timeout: 5 })
    }
  })

  it('a text column read back exactly whether its literal came from JSON or value by value (control characters, lone surrogates, "null")', async () => {
    // each value alone decides the path for its whole column: plain ones go through JSON.stringify, the others force the quoting loop
    const texts = ['plain', 'null', 'NULL', '', 'a"b\\c', 'é,}{ 🙂', 'tab\there', 'nl\nx', '\u0001', 'lone\ud800']
    const sql = postgres(inject('databaseUrl'), { max: 1, onnotice: () => {} })
    try {
      for (const text of [...texts, texts]) {
        const column = Array.isArray(text) ? text : [text, 'other', text]
        const sources = column.map((code) => ({ ...sampleRow, code }))
        const literals = attributionInsert.arrays([{ chainId: 8453, sources }])
        const at = attributionInsert.names.indexOf('code')
        const [row] = await sql`select ${literals[at]!}::text[] as codes`
        // a lone surrogate cannot travel as UTF-8 at all: it arrives as U+FFFD, as in any parameter the driver encodes
        expect(row!.codes).toEqual(column.map((code) => Buffer.from(code, 'utf8').toString('utf8')))
      }
    } finally {
      await sql.end({ timeout: 5 })
    }
  })

  it('the block time’s cheap element spells what its value does', () => {
    for (const seconds of [0, 1_760_000_002, 1_760_000_002, 1_760_000_004, 4_102_444_800]) {
      const row = { ...sampleRow, record: { ...sampleRow.record, blockTimestamp: seconds } }
      expect(ATTRIBUTION_COLUMNS.blockTimestamp.element!(row, 1)).toBe(ATTRIBUTION_COLUMNS.blockTimestamp.value(row, 1).toISOString())
      expect(isoOfSeconds(seconds)).toBe(new Date(seconds * 1000).toISOString())
    }
  })
})

const sampleRow = {
  code: 'x',
  resolution: { status: 'unregistered', wallet: null, registry: null },
  record: {
    kind: 'transaction', txHash: '0x01', txIndex: 0, blockNumber: 1, blockHash: '0x02', blockTimestamp: 1_760_000_000, userOpIndex: -1,
    sender: '0x03', target: '0x04', status: 'success', attribution: { codes: ['x'], suffix: '0x05', suffixBytes: 1, schemaId: 0, suffixGas: 16 },
  },
} as unknown as AttributionRow
