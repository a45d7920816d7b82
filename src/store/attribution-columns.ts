import { getTableColumns } from 'drizzle-orm'
import type { Resolution } from '../attribution/decode.js'
import type { StoredRecord } from '../attribution/records.js'
import { attributions, attributionSuffixes } from '../db/schema/index.js'

/**
 * The store's one vocabulary for attribution rows (issue 22.1): which value
 * each column of `attributions` and `attribution_suffixes` stores, and
 * which columns the aggregates read. The tables are typed from the drizzle
 * schema, so a column added there and not here (or named here and not
 * there) fails to compile; attribution-columns.test.ts checks the same at
 * run time, types included. Every list the commit needs is generated from
 * them: the insert's column list, the `unnest` arrays and their types, the
 * `returning` list of the aggregated columns.
 */

/** One attribution row: a record and one of its codes, resolved against the registry. */
export type AttributionRow = { record: StoredRecord; code: string; resolution: Resolution }

type Insert<T extends { $inferInsert: object }> = T['$inferInsert']
type Stored<T extends { $inferInsert: object }> = Exclude<keyof Insert<T>, 'id'>

/**
 * A column: what it stores for a row, and whether the aggregates read it.
 * `element`, when given, is the same value as the text its column type
 * reads (quoted like any string in the literal), for a column whose value
 * costs an allocation per row to build and again to print (a Date): the commit builds every column of every row, so this
 * is the hot loop of the committing process (attribution-columns.test.ts
 * checks that both spell the same value).
 */
type Column<Source, Value> = {
  value: (source: Source, chainId: number) => Value
  element?: (source: Source, chainId: number) => string
  aggregated?: true
}
type ColumnTable<T extends { $inferInsert: object }, Source> = { [K in Stored<T>]-?: Column<Source, Insert<T>[K]> }

export const ATTRIBUTION_COLUMNS: ColumnTable<typeof attributions, AttributionRow> = {
  chainId: { value: (_, chainId) => chainId, aggregated: true },
  blockNumber: { value: ({ record }) => record.blockNumber, aggregated: true },
  blockHash: { value: ({ record }) => record.blockHash },
  blockTimestamp: {
    value: ({ record }) => new Date(record.blockTimestamp * 1000),
    element: ({ record }) => isoOfSeconds(record.blockTimestamp),
    aggregated: true,
  },
  txHash: { value: ({ record }) => record.txHash, aggregated: true },
  txIndex: { value: ({ record }) => record.txIndex },
  kind: { value: ({ record }) => record.kind, aggregated: true },
  userOpIndex: { value: ({ record }) => record.userOpIndex, aggregated: true },
  userOpHash: { value: ({ record }) => record.userOpHash ?? null },
  sender: { value: ({ record }) => record.sender, aggregated: true },
  target: { value: ({ record }) => record.target },
  code: { value: ({ code }) => code, aggregated: true },
  codeStatus: { value: ({ resolution }) => resolution.status },
  codeWallet: { value: ({ resolution }) => resolution.wallet },
  schemaId: { value: ({ record }) => record.attribution.schemaId },
  registryChainId: { value: ({ resolution }) => resolution.registry?.chainId ?? null, aggregated: true },
  registryAddress: { value: ({ resolution }) => resolution.registry?.address ?? null, aggregated: true },
  suffixGas: { value: ({ record }) => record.attribution.suffixGas, aggregated: true },
  status: { value: ({ record }) => record.status, aggregated: true },
  actualGasCost: { value: ({ record }) => record.actualGasCost?.toString() ?? null },
}

/** One suffix per attributed transaction or UserOperation: the record itself. */
export const SUFFIX_COLUMNS: ColumnTable<typeof attributionSuffixes, StoredRecord> = {
  chainId: { value: (_, chainId) => chainId },
  txHash: { value: (record) => record.txHash },
  userOpIndex: { value: (record) => record.userOpIndex },
  blockNumber: { value: (record) => record.blockNumber },
  codes: { value: (record) => record.attribution.codes },
  suffix: { value: (record) => record.attribution.suffix },
  suffixBytes: { value: (record) => record.attribution.suffixBytes },
}

/**
 * A block time (unix seconds) as ISO text, remembering the last one: a
 * range's rows come block by block, a block's rows share its time, so on a
 * dense chain one Date and one string serve a hundred rows.
 */
let lastSeconds = Number.NaN
let lastIso = ''
export function isoOfSeconds(seconds: number): string {
  if (seconds !== lastSeconds) {
    lastIso = new Date(seconds * 1000).toISOString()
    lastSeconds = seconds
  }
  return lastIso
}

type AnyColumns = Record<string, Column<never, unknown>>
type SqlColumn = { key: string; name: string; sqlType: string }

/** The columns of a table in the table's order, with their SQL names and types from drizzle. */
function sqlColumns(table: Parameters<typeof getTableColumns>[0], columns: AnyColumns): SqlColumn[] {
  return Object.entries(getTableColumns(table))
    .filter(([key]) => key in columns)
    .map(([key, column]) => ({ key, name: column.name, sqlType: column.getSQLType() }))
}

/** Rows of one chain (a range's): the chain id is a column of every row. */
export type SourceGroup<Source> = { chainId: number; sources: readonly Source[] }

/** What a table's insert needs: its column list and one array literal per column for `unnest`. */
export type UnnestInsert<Source> = {
  /** `"chain_id", "block_number", …` in table order. */
  names: string[]
  /** The arrays' SQL types, in the same order (`integer[]`, `text[]` …). */
  arrayTypes: string[]
  /** The select list over `unnest(…) as u(names)`: each name, cast back for an array column. */
  selectList: string
  /** One array literal per column (`{1,2,NULL}`) over every group's sources, the parameters of `unnest`, each cast to its `arrayTypes`. */
  arrays(groups: ReadonlyArray<SourceGroup<Source>>): string[]
  /** Every group's sources as `COPY … FROM STDIN` text (a line per row, columns by tab, in `names` order): the bulk commit's rows. */
  copyText(groups: ReadonlyArray<SourceGroup<Source>>): string
}

/** Text PostgreSQL's array input reads as itself, unquoted: numbers, hex, ISO times, plain words (never `NULL`). */
const PLAIN_ELEMENT = /^[0-9A-Za-z_.:+-]+$/

const isPlain = (text: string) => PLAIN_ELEMENT.test(text) && (text.length !== 4 || text.toLowerCase() !== 'null')

/** One element of an array literal, quoted and escaped unless plain. */
function quoted(text: string): string {
  if (isPlain(text)) return text
  return `"${text.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
}

/**
 * A `text[]` value as one quoted element of an outer array literal. When
 * every item is plain (the usual code list) the inner literal holds only
 * plain characters, braces and commas, none of which the outer quoting
 * escapes: it is written in one go instead of quoted twice.
 */
function nestedArray(items: readonly unknown[]): string {
  let inner = ''
  for (let i = 0; i < items.length; i++) {
    const text = String(items[i])
    if (!isPlain(text)) return quoted(`{${items.map((item) => quoted(String(item))).join(',')}}`)
    inner += i === 0 ? text : `,${text}`
  }
  return `"{${inner}}"`
}

/**
 * A value as an element of an array literal, which PostgreSQL reads with the
 * column type's own input function. An array value (a `text[]` column: the
 * suffix's codes) is itself an array literal, quoted as one text element.
 * Written here rather than by the driver: its generic serializer runs two
 * regular expressions on every element, and this runs on every column of
 * every row.
 */
function arrayElement(value: unknown): string {
  if (value === null || value === undefined) return 'NULL'
  if (typeof value === 'number') return String(value)
  if (value instanceof Date) return value.toISOString()
  if (Array.isArray(value)) return nestedArray(value)
  return quoted(String(value))
}

/** A JSON escape PostgreSQL's array input would not read back as JSON meant it (anything but \" and \\); may match more. */
const FOREIGN_ESCAPE = /\\[^"\\]/

/**
 * A column's values as an array literal by way of JSON.stringify, which
 * runs natively over the whole column instead of one JavaScript call per
 * value: a JSON array of numbers, strings and nulls is an array literal
 * once its brackets are braces (strings double-quoted with \" and \\
 * escaped, as the array input reads them; `null` is NULL, "null" the
 * text). Undefined when the JSON holds another escape (a control
 * character, a lone surrogate), which the array input would misread: the
 * caller then quotes value by value. The values are the column table's:
 * integers, strings, null; a non-finite number would print as null.
 */
function literalFromJson(values: unknown[]): string | undefined {
  const json = JSON.stringify(values)
  if (FOREIGN_ESCAPE.test(json)) return undefined
  return `{${json.slice(1, -1)}}`
}

/** A column of numbers, strings and nulls as one array literal (the parameter of an `unnest` or `= any`). */
export function arrayLiteral(values: unknown[]): string {
  return literalFromJson(values) ?? `{${values.map(arrayElement).join(',')}}`
}

/** What COPY's text format reads as itself: anything but a backslash, tab, newline or carriage return. */
const COPY_SPECIAL = /[\\\t\n\r]/

/** A value as one field of COPY's text format, which PostgreSQL reads with the column type's input function. */
function copyField(value: unknown): string {
  if (value === null || value === undefined) return '\\N'
  if (typeof value === 'number') return String(value)
  if (value instanceof Date) return value.toISOString()
  const text = Array.isArray(value) ? `{${value.map((item) => quoted(String(item))).join(',')}}` : String(value)
  if (!COPY_SPECIAL.test(text)) return text
  return text.replaceAll('\\', '\\\\').replaceAll('\t', '\\t').replaceAll('\n', '\\n').replaceAll('\r', '\\r')
}

function unnestInsert<Source>(table: Parameters<typeof getTableColumns>[0], columns: Record<string, Column<Source, unknown>>): UnnestInsert<Source> {
  const ordered = sqlColumns(table, columns as AnyColumns)
  return {
    names: ordered.map((column) => column.name),
    // a text[] column travels as one array literal per row: an array of them is text[], cast to text[][] it would be two-dimensional
    arrayTypes: ordered.map((column) => (column.sqlType.endsWith('[]') ? 'text[]' : `${column.sqlType}[]`)),
    selectList: ordered.map((column) => (column.sqlType.endsWith('[]') ? `"${column.name}"::${column.sqlType}` : `"${column.name}"`)).join(', '),
    arrays(groups) {
      const count = groups.reduce((sum, group) => sum + group.sources.length, 0)
      return ordered.map(({ key, sqlType }) => {
        const { value, element } = columns[key]!
        const values = new Array<unknown>(count)
        let i = 0
        for (const { chainId, sources } of groups) {
          if (element) for (const source of sources) values[i++] = element(source, chainId)
          else for (const source of sources) values[i++] = value(source, chainId)
        }
        return (!sqlType.endsWith('[]') && literalFromJson(values)) || `{${values.map(arrayElement).join(',')}}`
      })
    },
    copyText(groups) {
      const fields = ordered.map(({ key }) => {
        const { value, element } = columns[key]!
        return element ?? value
      })
      // joined, not appended: `+=` makes a rope of two dozen 32-byte nodes a row (the commit thread's largest
      // garbage on a dense chain, bench/LOG.md), flattened again by a copy when first read; a join writes one
      // flat string from the parts
      const lines: string[] = []
      const line = new Array<string>(fields.length)
      for (const { chainId, sources } of groups)
        for (const source of sources) {
          for (let i = 0; i < fields.length; i++) line[i] = copyField(fields[i]!(source, chainId))
          lines.push(line.join('\t'))
        }
      // every line ends with a newline, the last one too
      if (lines.length > 0) lines.push('')
      return lines.join('\n')
    },
  }
}

export const attributionInsert = unnestInsert(attributions, ATTRIBUTION_COLUMNS as Record<string, Column<AttributionRow, unknown>>)
export const suffixInsert = unnestInsert(attributionSuffixes, SUFFIX_COLUMNS as Record<string, Column<StoredRecord, unknown>>)

/** The columns every aggregate is computed from, as the `returning` of an insert or delete of attribution rows. */
export const AGGREGATED_COLUMNS: readonly string[] = sqlColumns(attributions, ATTRIBUTION_COLUMNS as AnyColumns)
  .filter(({ key }) => (ATTRIBUTION_COLUMNS as AnyColumns)[key]!.aggregated)
  .map(({ name }) => name)
