import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { evaluated, readCsvAs as readAs } from '../../test/support/csv-readers.js'
import { csvCell, fieldColumns, toCsv } from './csv.js'

const SEPARATORS = [',', ';', '\t'] as const

/** A reader that strips leading whitespace (tabs and line breaks too) before it looks for a formula. */
const evaluatedOnceTrimmed = (cell: string) => evaluated(cell.replace(/^[\t\r\n ]+/, ''))

/** What the file's own reader must never see first in a text cell: a formula character, a tab or a carriage return (OWASP's list). */
const opensUnsafely = (cell: string) => evaluated(cell) || /^[\t\r]/.test(cell)

type Row = { rank: number; code: string; registry: string; share: number }
const columns = fieldColumns<Row>('rank', 'code', 'registry', 'share')

describe('CSV exports', () => {
  it('write the issue’s code so that no reader splitting on , ; or tab gets a formula cell', () => {
    const code = "x;=cmd|' /C calc'!A0;"
    const csv = toCsv(columns, [{ rank: 1, code, registry: 'canonical', share: 1 }])
    expect(csv).toBe(`rank,code,registry,share\r\n1,"x;'=cmd|' /C calc'!A0;",canonical,1\r\n`)
    for (const separator of SEPARATORS) {
      const cells = readAs(csv, separator).flat()
      expect(cells.filter(evaluated), `reader splitting on ${JSON.stringify(separator)}`).toEqual([])
    }
    // the file's own reader gets the code back, marked as text
    expect(readAs(csv, ',')[1]).toEqual(['1', "x;'=cmd|' /C calc'!A0;", 'canonical', '1'])
  })

  it.each([
    ['=1+1', "'=1+1"],
    ['+1', "'+1"],
    ['-1', "'-1"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['  =1', "'  =1"],
    ['"=1"', "\"'\"\"=1\"\"\""],
    ['\uFF1D1', "'\uFF1D1"],
    // a tab or line break first is itself acted on: one ' in front, and the formula after it defused for the tab reader
    ['\t=1+1', "\"'\t'=1+1\""],
    ['\tplain', "\"'\tplain\""],
    ['\r=1', "\"'\r'=1\""],
    ['a\t=1', "\"a\t'=1\""],
    ['a\n=1', "\"a\n'=1\""],
    ['a,b', '"a,b"'],
    ['a;b', '"a;b"'],
    ['say "hi"', '"say ""hi"""'],
    ['bc_alpha001', 'bc_alpha001'],
    ['2025-03-01', '2025-03-01'],
    ['8453:0x00000000000000000000000000000000000c0de5', '8453:0x00000000000000000000000000000000000c0de5'],
  ])('a text cell %j is written %s', (value, written) => {
    expect(csvCell(value)).toBe(written)
  })

  it('write numbers, booleans and empty values as they are (a negative change stays a number)', () => {
    expect([csvCell(-5), csvCell(0.25), csvCell(true), csvCell(null), csvCell(undefined)]).toEqual(['-5', '0.25', 'true', '', ''])
  })

  it('never give any of the three readers a formula cell, and give the comma reader every text back', () => {
    // no ' of its own, so that undoing the defusing is unambiguous
    const text = fc.string({ unit: fc.constantFrom('a', ',', ';', '\t', '\n', '\r', '"', ' ', '=', '+', '-', '@', '\uFF1D'), maxLength: 12 })
    fc.assert(
      fc.property(fc.nat(), text, text, (rank, code, registry) => {
        const csv = toCsv(columns, [{ rank, code, registry, share: 0.5 }])
        for (const separator of SEPARATORS) expect(readAs(csv, separator).flat().filter(evaluatedOnceTrimmed)).toEqual([])
        const [header, row, ...rest] = readAs(csv, ',')
        expect(header).toEqual(['rank', 'code', 'registry', 'share'])
        expect(rest).toEqual([])
        // the file's own cells never open with what a spreadsheet acts on
        expect(row!.filter(opensUnsafely)).toEqual([])
        // the only changes to a text: one ' in front when it could open a formula, one before a formula character after a separator
        const undo = (cell: string) =>
          cell.replace(/^'(?=[ "]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]|[\t\r\n])/, '').replace(/([,;\t\r\n])([ "]*)'(?=[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/g, '$1$2')
        expect(row!.map(undo)).toEqual([String(rank), code, registry, '0.5'])
      }),
      { numRuns: 2_000 },
    )
  })
})
