/** Thrown for an app URL that cannot identify an app; the message is the reason, for `app_url: <reason>`. */
export class InvalidAppUrlError extends Error {
  override name = 'InvalidAppUrlError'
}

/** Longest accepted app URL; browsers and proxies start failing beyond this. */
export const MAX_APP_URL_LENGTH = 2048

/**
 * The one spelling of an app's URL that pins, projects and notifications are
 * keyed by: scheme + lowercase host (with a non-default port) + path without
 * trailing slash. Query, fragment and credentials do not identify an app and
 * are dropped, so `https://Example.com/app/?ref=x` and `https://example.com/app`
 * are the same app.
 */
export function normalizeAppUrl(input: string): string {
  const trimmed = input.trim()
  if (trimmed.length === 0) throw new InvalidAppUrlError('must not be empty')
  if (trimmed.length > MAX_APP_URL_LENGTH) throw new InvalidAppUrlError(`must be at most ${MAX_APP_URL_LENGTH} characters`)
  let url: URL
  try {
    url = new URL(trimmed)
  } catch {
    throw new InvalidAppUrlError('must be an absolute http(s) URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InvalidAppUrlError('must use http or https')
  if (!url.hostname) throw new InvalidAppUrlError('must have a host')
  // URL already lowercases the host and drops a default port; the path keeps its case
  const path = url.pathname.replace(/\/+$/, '')
  return `${url.protocol}//${url.host.toLowerCase()}${path}`
}
