import type { FastifyReply } from 'fastify'

type Cell = string | number | boolean | null | undefined

/** One RFC 4180 field: quoted when it holds a comma, quote or line break; a leading =+-@ is defused for spreadsheets. */
function field(value: Cell): string {
  if (value === null || value === undefined) return ''
  let text = String(value)
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

export function toCsv(header: readonly string[], rows: readonly Cell[][]): string {
  return [header, ...rows].map((row) => row.map(field).join(',')).join('\r\n') + '\r\n'
}

/** Sends a CSV download; the string payload skips the JSON response schema. */
export function sendCsv(reply: FastifyReply, filename: string, header: readonly string[], rows: readonly Cell[][]) {
  const safeName = filename.replace(/[^0-9A-Za-z._-]/g, '_')
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${safeName}"`)
    .send(toCsv(header, rows))
}
