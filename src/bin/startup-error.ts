/*
 * What start-up and the one-shot commands say when a dependency fails, apart from the waiting
 * (startup.ts): a module of its own, so `attribution validate` can word a failed connection as
 * start-up does without loading the logger (pino) that the waiting needs.
 */

/** An expected condition that stops start-up: printed as one line, exit status 78 (EX_CONFIG). */
export class StartupError extends Error {
  override name = 'StartupError'
}

export function hostPort(url: string, defaultPort: number): string {
  const parsed = new URL(url)
  return `${parsed.hostname.replace(/^\[|\]$/g, '')}:${parsed.port || defaultPort}`
}

/** The short code of a failed connection: ECONNREFUSED, ENOTFOUND, ETIMEDOUT, HTTP_503, 28P01 … */
export function errorCode(error: unknown): string {
  let current = error as { code?: unknown; cause?: unknown; name?: unknown } | undefined
  for (let depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === 'string' && current.code) return current.code
    if (current.name === 'TimeoutError' || current.name === 'AbortError') return 'ETIMEDOUT'
    const aggregated = (current as { errors?: unknown[] }).errors
    if (Array.isArray(aggregated) && aggregated.length > 0) current = aggregated[0] as typeof current
    else current = current.cause as typeof current
  }
  return 'UNKNOWN'
}
