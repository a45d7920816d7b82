import { pino, type Logger } from 'pino'

export type { Logger }

/**
 * Secrets that may pass through a logged object. Request logs include headers
 * in some error paths, so API keys and bearer tokens are censored at the
 * logger, not left to each call site.
 */
export const redactedPaths = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'headers["x-api-key"]',
  'headers.authorization',
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
]

/** Query parameters whose values are never logged: a client that puts a credential in a URL must not leave it in our logs. */
const SECRET_PARAMETER = /token|key|secret|passw|auth|signature|session|credential/i

/** A request URL as logged: the values of secret-looking query parameters replaced. */
export function redactUrl(url: string): string {
  const queryStart = url.indexOf('?')
  if (queryStart < 0) return url
  const pairs = url
    .slice(queryStart + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=')
      if (equals < 0) return pair
      let name = pair.slice(0, equals)
      try {
        name = decodeURIComponent(name.replaceAll('+', ' '))
      } catch {
        // a name that is not valid percent-encoding is tested as it is
      }
      return SECRET_PARAMETER.test(name) ? `${pair.slice(0, equals)}=[redacted]` : pair
    })
  return `${url.slice(0, queryStart)}?${pairs.join('&')}`
}

type LoggedRequest = { method: string; url: string; host?: string; ip?: string; socket?: { remotePort?: number } }

/** Fastify's request serializer (it defers to this one), with the URL redacted. */
function serializeRequest(request: LoggedRequest) {
  return { method: request.method, url: redactUrl(request.url), host: request.host, remoteAddress: request.ip, remotePort: request.socket?.remotePort }
}

export function createLogger(options: { level: string; name?: string }): Logger {
  return pino({
    level: options.level,
    name: options.name,
    redact: { paths: redactedPaths, censor: '[redacted]' },
    serializers: { req: serializeRequest },
    base: { pid: process.pid },
  })
}
