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

const FORMULA_CHARACTER = '=+\\-@\\uFF1D\\uFF0B\\uFF0D\\uFF20'

/**
 * A text the file's own reader could act on as its cell opens: a formula
 * character (= + - @, or their full-width forms) first, after any spaces or
 * quotes (some readers trim spaces; a quoted formula is still a formula), or
 * a tab or line break first, which readers strip or act on.
 */
const STARTS_A_FORMULA = new RegExp(`^(?:[ "]*[${FORMULA_CHARACTER}]|[\\t\\r\\n])`)

/**
 * A formula character where a reader splitting on another separator could
 * start a cell: after a separator or line break inside the text — quotes do
 * not protect there, because a reader splitting on `;` sees our `,`-file's
 * quotes only when they open one of *its* cells — after any spaces and quotes.
 */
const FORMULA_AFTER_A_SEPARATOR = new RegExp(`([,;\\t\\r\\n])([ "]*)([${FORMULA_CHARACTER}])`, 'g')

/**
 * One cell. Codes and registries are written by anyone onchain. A text cell
 * that could start a formula gets a single leading `'` (shown as text, never
 * evaluated): `=1+1` is written `'=1+1`. Inside the text, a formula character
 * where another reader's cell could start gets its own `'`, and the cell is
 * quoted if it holds a separator or a quote: `x;=cmd|' /C calc'!A0;` is
 * written `"x;'=cmd|' /C calc'!A0;"`, which no reader splitting on `,` `;` or
 * tab evaluates. Numbers and booleans are written as they are.
 */
export function csvCell(value: Cell): string {
  if (value === null || value === undefined) return ''
  if (typeof value !== 'string') return String(value)
  const defused = value.replace(FORMULA_AFTER_A_SEPARATOR, "$1$2'$3")
  const text = STARTS_A_FORMULA.test(value) ? `'${defused}` : defused
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text
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
