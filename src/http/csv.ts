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
 * imported as TSV), or a line break. A text cell holding any of them is
 * quoted, so every reader sees it as one cell.
 */
const SPLITS_A_CELL = /[",;\t\r\n]/

/**
 * Text a spreadsheet reads as a formula: starting (after spaces, which some
 * trim) with = + - @ or their full-width forms, or with a tab or line break.
 */
const STARTS_A_FORMULA = /^(?:[ ]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]|[\t\r\n])/

/**
 * One cell. Codes and registries are written by anyone onchain: a text cell
 * that could start a formula is defused with a leading `'` (shown as text,
 * never evaluated) and quoted; a text cell holding a quote or any reader's
 * separator is quoted. `x;=cmd|' /C calc'!A0;` reaches a `;` reader as one
 * cell, not as `x` and `=cmd|…`. Numbers and booleans are written as they are.
 */
export function csvCell(value: Cell): string {
  if (value === null || value === undefined) return ''
  if (typeof value !== 'string') return String(value)
  const defused = STARTS_A_FORMULA.test(value)
  const text = defused ? `'${value}` : value
  return defused || SPLITS_A_CELL.test(text) ? `"${text.replaceAll('"', '""')}"` : text
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
