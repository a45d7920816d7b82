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

/**
 * Configured URLs carry credentials: providers put the API key in the RPC or
 * WebSocket URL (a path segment `/v2/<key>`, a query value, the userinfo),
 * operators the password in DATABASE_URL and REDIS_URL. Libraries quote those
 * URLs in their errors (viem's HttpError message, a driver's address), in
 * causes and stacks, at any level, so no call site can be trusted to leave
 * them out. The logger is the one place that can: every line it writes, once
 * serialized, has each credential part of every configured URL replaced by
 * `***` (`redactSecrets`, pino's `streamWrite` hook), and the userinfo of any
 * URL at all.
 */
const REDACTED_PART = '***'

/** A part shorter than this is not searched for on its own (it would blank common words); in a URL's userinfo it still goes. */
const SHORTEST_SECRET = 4

/** Every `scheme://…` in a text, up to a space, quote, comma or bracket. */
const URL_IN_TEXT = /[a-z][a-z0-9+.-]*:\/\/[^\s"'<>,`\\]+/gi

/** The userinfo of any URL in a line: `scheme://user:password@` becomes `scheme://***@`. */
const USERINFO_IN_TEXT = /([a-z][a-z0-9+.-]*:\/\/)[^\s"'<>/@`\\]+@/gi

/**
 * A path segment, username or value that reads as a credential rather than a
 * name: long, or mixing letters and digits (`v2`, `base-mainnet`, `postgres`
 * stay; `oKxs8xQ3…`, `0f4e…c9` go).
 */
function readsAsCredential(text: string): boolean {
  return text.length >= 24 || (text.length >= 8 && /[0-9]/.test(text) && /[A-Za-z]/.test(text))
}

function decodedOrSame(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** The credential parts of one URL: password, a key-like username, key-like path segments, secret or key-like query values, the fragment. */
export function credentialsOf(url: string): string[] {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return []
  }
  const parts = [parsed.password]
  if (readsAsCredential(decodedOrSame(parsed.username))) parts.push(parsed.username)
  parts.push(...parsed.pathname.split('/').filter((segment) => readsAsCredential(decodedOrSame(segment))))
  for (const [name, value] of parsed.searchParams) if (SECRET_PARAMETER.test(name) || readsAsCredential(value)) parts.push(value)
  if (parsed.hash.length > 1) parts.push(parsed.hash.slice(1))
  return parts.filter((part) => part.length > 0)
}

/** Every string inside a value: objects, arrays and maps walked (the parsed configuration holds URLs in all three). */
function stringsIn(value: unknown, found: string[] = [], depth = 0): string[] {
  if (typeof value === 'string') found.push(value)
  else if (depth > 8 || value === null || typeof value !== 'object') return found
  else if (value instanceof Map) for (const inner of value.values()) stringsIn(inner, found, depth + 1)
  else for (const inner of Object.values(value)) stringsIn(inner, found, depth + 1)
  return found
}

/** The URLs in the configuration (RPC, WebSocket, validation nodes, database, Redis), wherever they sit in it. */
export function configuredUrls(config: object): string[] {
  return stringsIn(config).flatMap((text) => text.match(URL_IN_TEXT) ?? [])
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * A function that blanks the credentials of these URLs in a log line: each
 * part as written in the URL, percent-decoded, percent-encoded and as JSON
 * escapes it (the line is JSON), longest first.
 */
export function createSecretRedactor(urls: readonly string[]): (line: string) => string {
  const forms = new Set<string>()
  for (const part of urls.flatMap(credentialsOf)) {
    const decoded = decodedOrSame(part)
    for (const form of [part, decoded, encodeURIComponent(decoded)]) {
      if (form.length < SHORTEST_SECRET) continue
      forms.add(form)
      forms.add(JSON.stringify(form).slice(1, -1))
    }
  }
  const alternatives = [...forms].sort((a, b) => b.length - a.length).map(escapeRegExp)
  const secrets = alternatives.length > 0 ? new RegExp(alternatives.join('|'), 'g') : undefined
  return (line) => {
    const withoutUserinfo = line.includes('@') ? line.replace(USERINFO_IN_TEXT, `$1${REDACTED_PART}@`) : line
    return secrets ? withoutUserinfo.replace(secrets, REDACTED_PART) : withoutUserinfo
  }
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

type LoggerOptions = {
  level: string
  name?: string
  repeatWindowMs?: number
  destination?: DestinationStream
  /** URLs whose credentials never reach a line (`configuredUrls(config)`); the URLs in the environment's values are always added. */
  secretUrls?: readonly string[]
}

export function createLogger(options: LoggerOptions): Logger {
  const fromEnvironment = configuredUrls(process.env)
  const redactSecrets = createSecretRedactor([...fromEnvironment, ...(options.secretUrls ?? [])])
  return pino({
    level: options.level,
    name: options.name,
    hooks: { logMethod: createRepeatFilter(options.repeatWindowMs ?? REPEATED_LOG_WINDOW_MS) as never, streamWrite: redactSecrets },
    redact: { paths: redactedPaths, censor: '[redacted]' },
    serializers: { req: serializeRequest, err: serializeError },
    base: { pid: process.pid },
  }, options.destination)
}
