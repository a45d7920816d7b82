/**
 * How a spreadsheet splitting on `separator` reads a file: RFC 4180, where a
 * quote opens a quoted cell only at the start of one of *its* cells (a quote
 * elsewhere is a plain character), and a record ends at a line break outside
 * quotes. Lenient where readers are: text after a closing quote is kept.
 */
export function readCsvAs(text: string, separator: string): string[][] {
  const records: string[][] = []
  let record: string[] = []
  let cell = ''
  let atCellStart = true
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"'
        i++
      } else if (c === '"') quoted = false
      else cell += c
      continue
    }
    if (c === '"' && atCellStart) {
      quoted = true
      atCellStart = false
    } else if (c === separator) {
      record.push(cell)
      cell = ''
      atCellStart = true
    } else if (c === '\r' || c === '\n') {
      if (c === '\r' && text[i + 1] === '\n') i++
      record.push(cell)
      records.push(record)
      record = []
      cell = ''
      atCellStart = true
    } else {
      cell += c
      atCellStart = false
    }
  }
  if (cell !== '' || record.length > 0) records.push([...record, cell])
  return records
}

/** A cell a spreadsheet evaluates: a formula character first, after any spaces or quotes it may strip. */
export const evaluated = (cell: string) => /^[ "]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/.test(cell)
