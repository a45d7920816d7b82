import { pino, type DestinationStream, type Logger } from 'pino'

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

/** At most one warning or error per this long for each component and kind of error. */
export const REPEATED_LOG_WINDOW_MS = 10_000
const WARN_LEVEL = 40

/**
 * An outage makes every loop iteration, job and request fail the same way;
 * logging each turns a 30 s Redis restart into hundreds of lines. Warnings and
 * errors are keyed by component (and the dependency variable, when given) and
 * message: the first of a kind is logged, repeats within the window are
 * counted, and the next line of that kind says how many were left out.
 */
function createRepeatFilter(windowMs: number) {
  const seen = new Map<string, { at: number; suppressed: number }>()
  return function logMethod(this: Logger, args: unknown[], method: (...args: unknown[]) => void, level: number) {
    if (level < WARN_LEVEL || windowMs <= 0) return method.apply(this, args)
    const [first, second] = args
    const fields = typeof first === 'object' && first !== null ? (first as Record<string, unknown>) : {}
    const message = typeof first === 'string' ? first : typeof second === 'string' ? second : ''
    const bindings = this.bindings() as Record<string, unknown>
    const key = `${String(fields.component ?? bindings.component ?? '')}|${String(fields.variable ?? '')}|${message}`
    const now = Date.now()
    const last = seen.get(key)
    if (last && now - last.at < windowMs) {
      last.suppressed++
      return
    }
    seen.set(key, { at: now, suppressed: 0 })
    if (!last?.suppressed) return method.apply(this, args)
    const repeated = { repeated_since_last_line: last.suppressed }
    if (typeof first === 'object' && first !== null) return method.apply(this, [{ ...fields, ...repeated }, ...args.slice(1)])
    return method.apply(this, [repeated, ...args])
  }
}

/**
 * Errors with a code (ECONNREFUSED, ETIMEDOUT, CONNECTION_CLOSED, NOAUTH …)
 * are expected operational conditions: their code and message say it all, a
 * stack trace only buries them. Other errors keep their stack.
 */
function serializeError(error: unknown) {
  const serialized = pino.stdSerializers.err(error as Error) as Record<string, unknown> | undefined
  if (serialized && typeof (error as { code?: unknown })?.code === 'string') delete serialized.stack
  return serialized
}

export function createLogger(options: { level: string; name?: string; repeatWindowMs?: number; destination?: DestinationStream }): Logger {
  return pino({
    level: options.level,
    name: options.name,
    hooks: { logMethod: createRepeatFilter(options.repeatWindowMs ?? REPEATED_LOG_WINDOW_MS) as never },
    redact: { paths: redactedPaths, censor: '[redacted]' },
    serializers: { req: serializeRequest, err: serializeError },
    base: { pid: process.pid },
  }, options.destination)
}
