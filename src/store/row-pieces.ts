import { deserialize, serialize } from 'node:v8'
import type { AttributionRow } from './attribution-columns.js'

/**
 * Rows a piece holds (at least, up to the end of a record's rows): the
 * commit handles a batch a piece at a time, letting the event loop run
 * between pieces (~20 ms a piece on a dense chain).
 */
export const ROWS_A_PIECE = 2_000

/**
 * A range's rows as bytes, a piece at a time (the structured clone's
 * format, `node:v8`): how rows sent ahead of their commit wait on the commit
 * thread (threaded-store.ts `hold`). A dense range's rows wait there a
 * second or more for their statement; as objects they lived through the
 * thread's scavenges while it folded and wrote the batch before, and each
 * scavenge copied them again until they reached its old generation, to be
 * garbage there a second later (the thread promoted ~540 MB on the dense
 * bench, ~1.5 KB a row; bench/LOG.md). As bytes they wait outside the heap,
 * and the bulk commit reads one piece, writes its COPY text and folds it,
 * then lets its objects go young.
 *
 * A piece ends with a record's last row: the rows of one record share its
 * object within a piece (the suffix is written once per record, recognized
 * by identity: bulk-commit.ts), and a piece is read on its own.
 */
export type RowPieces = { count: number; pieces: Uint8Array[] }

export function rowPieces(rows: readonly AttributionRow[], rowsAPiece = ROWS_A_PIECE): RowPieces {
  const pieces: Uint8Array[] = []
  let from = 0
  while (from < rows.length) {
    let to = Math.min(rows.length, from + rowsAPiece)
    while (to < rows.length && rows[to]!.record === rows[to - 1]!.record) to++
    pieces.push(serialize(rows.slice(from, to)))
    from = to
  }
  return { count: rows.length, pieces }
}

/** A piece's rows, as objects of their own. */
export const readPiece = (piece: Uint8Array): AttributionRow[] => deserialize(piece) as AttributionRow[]

/**
 * A range's rows a piece at a time: those it holds as objects in slices,
 * then those it holds as pieces, each read when its turn comes (and let go
 * by the caller before the next).
 */
export function* piecesOf({ rows, rowPieces }: { rows: readonly AttributionRow[]; rowPieces?: RowPieces | undefined }): Generator<readonly AttributionRow[]> {
  for (let from = 0; from < rows.length; from += ROWS_A_PIECE) yield rows.slice(from, from + ROWS_A_PIECE)
  for (const piece of rowPieces?.pieces ?? []) yield readPiece(piece)
}

/** Every row of the pieces at once: for a commit that needs them all together (the tip path's statement). */
export function allRows({ pieces }: RowPieces): AttributionRow[] {
  return pieces.flatMap(readPiece)
}

/** The buffers under the pieces, for a postMessage to move instead of copy (a piece that shares its buffer is copied first). */
export function transferList({ pieces }: RowPieces): ArrayBuffer[] {
  return pieces.map((piece, i) => {
    if (piece.byteOffset !== 0 || piece.byteLength !== piece.buffer.byteLength) pieces[i] = piece = new Uint8Array(piece)
    return piece.buffer as ArrayBuffer
  })
}
