/**
 * RPC URLs as logs, status answers and metric labels show them. Providers
 * put the API key in the URL — Alchemy and Infura in a path segment
 * (`/v2/<key>`, `/v3/<key>`), QuickNode and Ankr in the path too, others in
 * the query (`?apikey=`) or the userinfo (`https://user:key@host`) — and a
 * leaked key is someone else's quota on the operator's bill. So every place
 * that shows an RPC URL shows this instead.
 */

const REDACTED = '***'

/**
 * A path segment that looks like a credential rather than a route: long, and
 * made only of token characters, with letters and digits mixed (`v2`,
 * `base-mainnet`, `rpc` stay; `oKxs8xQ3…`, `0f4e…c9` go).
 */
function looksLikeKey(segment: string): boolean {
  if (!/^[A-Za-z0-9_.~-]+$/.test(segment)) return segment.length >= 16
  if (segment.length >= 24) return true
  return segment.length >= 12 && /[0-9]/.test(segment) && /[A-Za-z]/.test(segment)
}

/**
 * The URL with its userinfo, every query value, its fragment and every
 * key-looking path segment replaced by `***`; scheme, host, port and route
 * kept, so two endpoints stay told apart. Text that is not a URL is not shown.
 */
export function redactRpcUrl(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return '[not a URL]'
  }
  const userinfo = parsed.username || parsed.password ? `${REDACTED}@` : ''
  const path = parsed.pathname
    .split('/')
    .map((segment) => (looksLikeKey(decodeSafely(segment)) ? REDACTED : segment))
    .join('/')
  const query = [...parsed.searchParams.keys()].map((name) => `${encodeURIComponent(name)}=${REDACTED}`).join('&')
  return `${parsed.protocol}//${userinfo}${parsed.host}${path === '/' ? '' : path}${query ? `?${query}` : ''}${parsed.hash ? `#${REDACTED}` : ''}`
}

function decodeSafely(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}
