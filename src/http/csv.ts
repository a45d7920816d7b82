import type { FastifyReply } from 'fastify'

export type Cell = string | number | boolean | null | undefined

/** One CSV column: its header and how a row gives its cell. Header and value are written once, side by side. */
export type CsvColumn<Row> = { readonly header: string; readonly value: (row: Row) => Cell }

/** Columns that are a row's own fields, headed by their names (the JSON answer's names). */
export function fieldColumns<Row>(...names: Array<keyof Row & string>): CsvColumn<Row>[] {
  return names.map((name) => ({ header: name, value: (row: Row) => row[name] as Cell }))
}

/**
 * Where a spreadsheet starts a new cell when it opens a CSV: a comma
 * (RFC 4180), a semicolon (Excel in most European locales), a tab (pasted or
 * imported as TSV), or a line break. A text cell holding any of them, or a
 * quote, is quoted.
 */
const NEEDS_QUOTES = /[",;\t\r\n]/

/**
 * A formula character (= + - @, or their full-width forms) where any of those
 * readers could start a cell: at the text's start, or after a separator or
 * line break inside it — quotes do not protect there, because a reader
 * splitting on `;` sees our `,`-file's quotes only when they open one of *its*
 * cells — after any spaces and quotes (some readers trim spaces; a quoted
 * formula is still a formula).
 */
const FORMULA_WHERE_A_CELL_STARTS = /(^|[,;\t\r\n])([ "]*)([=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/g

/**
 * One cell. Codes and registries are written by anyone onchain. In a text
 * cell every formula character where a cell could start gets a `'` in front
 * (shown as text, never evaluated), and the cell is quoted if it holds a
 * separator or a quote: `x;=cmd|' /C calc'!A0;` is written `"x;'=cmd|' /C calc'!A0;"`,
 * which no reader splitting on `,` `;` or tab evaluates. Numbers and booleans
 * are written as they are.
 */
export function csvCell(value: Cell): string {
  if (value === null || value === undefined) return ''
  if (typeof value !== 'string') return String(value)
  const text = value.replace(FORMULA_WHERE_A_CELL_STARTS, "$1$2'$3")
  return NEEDS_QUOTES.test(text) || text !== value ? `"${text.replaceAll('"', '""')}"` : text
}

export function toCsv<Row>(columns: readonly CsvColumn<Row>[], rows: readonly Row[]): string {
  const lines = [columns.map((column) => csvCell(column.header)).join(',')]
  for (const row of rows) lines.push(columns.map((column) => csvCell(column.value(row))).join(','))
  return `${lines.join('\r\n')}\r\n`
}

/** Sends a CSV download; the string payload skips the JSON response schema. */
export function sendCsv<Row>(reply: FastifyReply, filename: string, columns: readonly CsvColumn<Row>[], rows: readonly Row[]) {
  const safeName = filename.replace(/[^0-9A-Za-z._-]/g, '_')
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${safeName}"`)
    .send(toCsv(columns, rows))
}
