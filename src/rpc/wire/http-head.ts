/**
 * The head of an HTTP/1.x answer as the socket reader (http-socket.ts)
 * needs it: the status, whether the connection stays open, Retry-After,
 * and how the body is framed. Framings it cannot read are refused here, at
 * the head, with their own error (UnreadableFramingError): a body read
 * under a framing it did not declare would only fail later as an
 * "unreadable" answer, and be asked again as if its batch were too long.
 */

export type Framing = { kind: 'length'; total: number } | { kind: 'chunked' } | { kind: 'close' }

/** A head that is whole and final (not 1xx). */
export type AnswerHead = { status: number; keepAlive: boolean; retryAfter: string | undefined; framing: Framing }

/** The node framed its answer in a way this client does not read (a transfer coding other than plain chunked). */
export class UnreadableFramingError extends Error {
  override name = 'UnreadableFramingError'
}

/**
 * Reads a status line and headers (the text before the blank line).
 * Returns undefined for an informational (1xx) head, which another follows.
 * Throws on a head that is not HTTP/1.x, a malformed header line, an
 * invalid Content-Length, or a transfer coding other than `chunked` alone.
 */
export function readAnswerHead(head: string): AnswerHead | undefined {
  const lines = head.split('\r\n')
  const statusLine = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(lines[0]!)
  if (!statusLine) throw new Error(`the node's answer is not HTTP/1.x: ${JSON.stringify(lines[0]!.slice(0, 80))}`)
  const status = Number(statusLine[2])
  if (status >= 100 && status < 200) return undefined
  let keepAlive = statusLine[1] === '1'
  let retryAfter: string | undefined
  let length: number | undefined
  let chunked = false
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!
    const colon = line.indexOf(':')
    if (colon <= 0) throw new Error(`the node's answer has a malformed header line: ${JSON.stringify(line.slice(0, 80))}`)
    const name = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    if (name === 'content-length') {
      if (!/^\d+$/.test(value) || (length !== undefined && length !== Number(value))) throw new Error(`the node's answer has an invalid Content-Length: ${value}`)
      length = Number(value)
    } else if (name === 'transfer-encoding') {
      // only `chunked` alone: `gzip, chunked` would hand compressed bytes on as the answer; a second header line adds codings too
      if (chunked || value.toLowerCase() !== 'chunked') {
        throw new UnreadableFramingError(`the node's answer has a transfer coding this client does not read: ${JSON.stringify(value.slice(0, 80))} (RPC_HTTP_CLIENT=undici reads it)`)
      }
      chunked = true
    } else if (name === 'connection') {
      const tokens = value.toLowerCase().split(',').map((token) => token.trim())
      if (tokens.includes('close')) keepAlive = false
      else if (tokens.includes('keep-alive')) keepAlive = true
    } else if (name === 'retry-after') retryAfter = value
  }
  if (status === 204 || status === 304) return { status, keepAlive, retryAfter, framing: { kind: 'length', total: 0 } }
  if (chunked) return { status, keepAlive, retryAfter, framing: { kind: 'chunked' } }
  if (length !== undefined) return { status, keepAlive, retryAfter, framing: { kind: 'length', total: length } }
  return { status, keepAlive: false, retryAfter, framing: { kind: 'close' } }
}
