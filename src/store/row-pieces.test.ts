import { describe, expect, it } from 'vitest'
import type { StoredRecord } from '../attribution/records.js'
import type { AttributionRow } from './attribution-columns.js'
import { allRows, piecesOf, readPiece, rowPieces, transferList } from './row-pieces.js'

/** `records` records, the i-th with `codesOf(i)` codes: a row per code, a record's rows sharing its object. */
function rowsOf(records: number, codesOf: (i: number) => number): AttributionRow[] {
  const rows: AttributionRow[] = []
  for (let i = 0; i < records; i++) {
    const record = { txHash: `0x${i.toString(16).padStart(64, '0')}`, blockNumber: i, actualGasCost: 10n ** 20n + BigInt(i) } as unknown as StoredRecord
    for (let c = 0; c < codesOf(i); c++) rows.push({ record, code: `code${c}`, resolution: { status: 'registered', wallet: null } as AttributionRow['resolution'] })
  }
  return rows
}

describe('rows as pieces of bytes (row-pieces.ts)', () => {
  it('gives back every row, in order, equal to what was sent', () => {
    const rows = rowsOf(50, (i) => 1 + (i % 4))
    const pieces = rowPieces(rows, 10)
    expect(pieces.count).toBe(rows.length)
    expect(allRows(pieces)).toEqual(rows)
    expect([...piecesOf({ rows: [], rowPieces: pieces })].flat()).toEqual(rows)
  })

  it('ends each piece with a record’s last row, and a record’s rows share one object within their piece', () => {
    const rows = rowsOf(30, (i) => (i % 5 === 0 ? 7 : 2))
    const pieces = rowPieces(rows, 4)
    let seen = 0
    for (const piece of pieces.pieces) {
      const read = readPiece(piece)
      expect(read.length).toBeGreaterThanOrEqual(Math.min(4, rows.length - seen))
      // the piece's last row is its record's last: the next piece starts a new record
      expect(rows[seen + read.length - 1]!.record).not.toBe(rows[seen + read.length]?.record)
      for (let i = 1; i < read.length; i++) expect(read[i]!.record === read[i - 1]!.record).toBe(rows[seen + i]!.record === rows[seen + i - 1]!.record)
      seen += read.length
    }
    expect(seen).toBe(rows.length)
  })

  it('reads rows held as objects in slices before the pieces', () => {
    const [objects, pieced] = [rowsOf(3, () => 1), rowsOf(4, () => 2)]
    expect([...piecesOf({ rows: objects, rowPieces: rowPieces(pieced) })].flat()).toEqual([...objects, ...pieced])
    expect([...piecesOf({ rows: [] })]).toEqual([])
  })

  it('moves each piece’s own buffer, copying a piece that shares one', () => {
    const pieces = rowPieces(rowsOf(5, () => 1), 2)
    const shared = new Uint8Array(pieces.pieces[0]!.byteLength + 8)
    shared.set(pieces.pieces[0]!, 8)
    pieces.pieces[0] = shared.subarray(8)
    const buffers = transferList(pieces)
    expect(buffers.every((buffer, i) => buffer === pieces.pieces[i]!.buffer && buffer.byteLength === pieces.pieces[i]!.byteLength)).toBe(true)
    expect(allRows(pieces)).toEqual(rowsOf(5, () => 1))
  })
})
