/**
 * Chunked transfer coding, decoded in place as it arrives (http-socket.ts):
 * chunk data moves down over the chunk-size lines before it, so the buffer
 * holds about the answer's size and no second copy is made. Extensions
 * after a `;` and trailers are read past.
 */

export type ChunkState = 'size' | 'data' | 'data-end' | 'trailer' | 'done'

/** A body being decoded: `body[0, decoded)` is the answer so far, `body[decoded, received)` the few bytes of a line not yet whole. */
export type ChunkedBody = { body: Buffer | undefined; received: number; decoded: number; chunkLeft: number; chunkState: ChunkState }

/** Longest chunk-size line (with extensions) read. */
const CHUNK_LINE_AT_MOST = 4096

/** Decodes what has been received so far; `chunkState` is `done` once the last chunk and the trailers are in. */
export function dechunk(state: ChunkedBody) {
  const body = state.body!
  let at = state.decoded
  const end = state.received
  while (state.chunkState !== 'done') {
    if (state.chunkState === 'data') {
      const bytes = Math.min(state.chunkLeft, end - at)
      if (bytes === 0) break
      if (at !== state.decoded) body.copy(body, state.decoded, at, at + bytes)
      state.decoded += bytes
      at += bytes
      state.chunkLeft -= bytes
      if (state.chunkLeft === 0) state.chunkState = 'data-end'
      continue
    }
    if (state.chunkState === 'data-end') {
      if (end - at < 2) break
      if (body[at] !== 13 || body[at + 1] !== 10) throw new Error('the node sent a chunk longer than its size line says')
      at += 2
      state.chunkState = 'size'
      continue
    }
    const lineEnd = lineEndIn(body, at, end)
    if (lineEnd < 0) {
      if (end - at > CHUNK_LINE_AT_MOST) throw new Error('the node sent a chunk-size line without an end')
      break
    }
    const lineStart = at
    at = lineEnd + 2
    if (state.chunkState === 'trailer') {
      // trailers are read past; an empty line ends the answer
      if (lineEnd === lineStart) state.chunkState = 'done'
      continue
    }
    const size = chunkSize(body, lineStart, lineEnd)
    if (size < 0) throw new Error(`the node sent an invalid chunk size: ${JSON.stringify(body.toString('latin1', lineStart, Math.min(lineEnd, lineStart + 40)))}`)
    state.chunkLeft = size
    state.chunkState = size === 0 ? 'trailer' : 'data'
  }
  // the undecoded tail (part of a line) moves down next to the decoded data, so the buffer holds about the answer's size
  if (at !== state.decoded) body.copy(body, state.decoded, at, end)
  state.received = state.decoded + (end - at)
}

/** Where the CRLF ending the line at `from` starts, or -1 when it has not arrived by `end`. Read byte by byte: lines are short, and a node may send a million of them. */
function lineEndIn(body: Buffer, from: number, end: number): number {
  for (let i = from; i < end - 1; i++) if (body[i] === 13 && body[i + 1] === 10) return i
  return -1
}

/** Whitespace as String.prototype.trim sees it among Latin-1 bytes. */
const isBlank = (byte: number | undefined) => byte === 32 || (byte !== undefined && byte >= 9 && byte <= 13) || byte === 160

/** The chunk size of the line `body[from, to)`: 1 to 8 hex digits, blanks around them, extensions after a `;`; -1 when it is not one. */
function chunkSize(body: Buffer, from: number, to: number): number {
  let at = from
  while (at < to && isBlank(body[at])) at++
  let size = 0
  let digits = 0
  for (; at < to; at++, digits++) {
    const byte = body[at]!
    const value = byte >= 48 && byte <= 57 ? byte - 48 : byte >= 97 && byte <= 102 ? byte - 87 : byte >= 65 && byte <= 70 ? byte - 55 : -1
    if (value < 0) break
    size = size * 16 + value
  }
  while (at < to && isBlank(body[at])) at++
  return digits >= 1 && digits <= 8 && (at === to || body[at] === 59) ? size : -1
}
