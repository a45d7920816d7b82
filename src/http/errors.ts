import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod'
import { errorBody } from '../contract/error-body.js'
import { domainErrorToHttp, routeFailureToHttp, type RouteFailure } from './domain-errors.js'
import { HttpError } from './http-error.js'

export { errorBody, errorBodySchema, type ErrorBody } from '../contract/error-body.js'
export { badRequest, HttpError, notFound } from './http-error.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What this route's unexpected failures mean to its clients (see RouteFailure); unset: a 500 or, for an outage, a 503. */
    failure?: RouteFailure
  }
}

/** Default error codes for statuses Fastify itself raises (bad JSON, too large, wrong media type …). */
const codeByStatus: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  408: 'request_timeout',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  431: 'headers_too_large',
  429: 'rate_limited',
  500: 'internal_error',
  502: 'bad_gateway',
  503: 'service_unavailable',
  504: 'gateway_timeout',
}

function fieldOf(context: string | undefined, instancePath: string): string {
  const path = instancePath.replace(/^\//, '').replaceAll('/', '.')
  if (path) return path
  return context === 'querystring' ? 'query' : (context ?? 'body')
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH',
  'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED',
  // Postgres: admin shutdown, cannot connect now, connection failures
  '57P01', '57P03', '08006', '08001', '08003', '08004',
])
const CONNECTION_MESSAGES = /Connection is closed|Stream isn't writeable|enableOfflineQueue|ECONNREFUSED|connect ETIMEDOUT|write CONNECTION_CLOSED|Reached the max retries|Command timed out/i

/**
 * True for errors that mean a dependency (Postgres, Redis) could not be
 * reached. Looks through `cause`: drizzle wraps driver errors in
 * DrizzleQueryError, whose message (the SQL) says nothing about the outage.
 */
export function isDependencyOutage(error: unknown): boolean {
  let current = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined
  for (let depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === 'string' && CONNECTION_CODES.has(current.code)) return true
    if (typeof current.message === 'string' && CONNECTION_MESSAGES.test(current.message)) return true
    current = current.cause as typeof current
  }
  return false
}

/** SQLSTATEs of text Postgres cannot store: a NUL character (U+0000), or bytes invalid in the database encoding. */
const UNSTORABLE_TEXT_CODES = new Set(['22021', '22P05'])

/** True when Postgres refused a value of the request itself (looking through drizzle's wrapper): bad input, not a failure. */
export function isUnstorableText(error: unknown): boolean {
  let current = error as { code?: unknown; cause?: unknown } | undefined
  for (let depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === 'string' && UNSTORABLE_TEXT_CODES.has(current.code)) return true
    current = current.cause as typeof current
  }
  return false
}

/**
 * Errors Fastify's router raises before any route (and so any error
 * handler) runs: a path that is not valid percent-encoding, a path
 * parameter over the length limit. Rendered in the shared shape too.
 */
export function frameworkErrorHandler(error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400
  return reply.code(status).send(errorBody(codeByStatus[status] ?? 'invalid_request', error.message))
}

/**
 * Requests Node's HTTP parser rejects before Fastify sees them (headers
 * over the size limit, malformed requests, a request that never finished
 * arriving within HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS):
 * answered in the shared shape, then the connection is closed, as Fastify's
 * default handler does. `onTimeout` counts the requests that took too long.
 */
export function createClientErrorHandler(onTimeout: () => void = () => {}) {
  return function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket) {
    if (error.code === 'ECONNRESET' || socket.destroyed) return
    const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    if (timedOut) onTimeout()
    const [status, message] = timedOut
      ? [408, 'request: not received in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'headers: larger than the server accepts']
        : [400, 'request: not a valid HTTP request']
    const body = JSON.stringify(errorBody(codeByStatus[status]!, message))
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      )
    }
    socket.destroy(error)
  }
}

/**
 * A client that closed its connection before its request arrived whole (an
 * upload cut off): Node fails the body's stream with ECONNRESET "aborted".
 * That is the client's doing, not a dependency's, and nobody is left to
 * answer. It is logged once, by logClientAborts, whatever stage the request
 * had reached.
 */
export function isClientAbort(error: { code?: unknown; message?: unknown }, request: FastifyRequest): boolean {
  return request.raw.aborted === true && (error.code === 'ECONNRESET' || error.message === 'aborted')
}

/**
 * Logs at debug, and counts, every request whose client closed the
 * connection before the request arrived whole — in a hook, a body being read
 * or a handler (Fastify's onRequestAbort). A body read that fails also
 * reaches errorHandler below, which answers nobody and logs nothing; a
 * request cut off before its body is read never reaches it at all.
 */
export function logClientAborts(app: FastifyInstance, onAbort: () => void) {
  app.addHook('onRequestAbort', async (request) => {
    onAbort()
    request.log.debug({ method: request.method, url: request.url.split('?')[0] }, 'client aborted its request')
  })
}

/** Errors that are the client's: a 4xx Fastify raised (body parsing, size, media type) or a failed schema. */
function isClientError(error: FastifyError): boolean {
  return hasZodFastifySchemaValidationErrors(error) || (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500)
}

/**
 * The server's one error handler: every error of every route ends here.
 * Domain errors become their status (domain-errors.ts); a route's unexpected
 * failure becomes what its `config.failure` says; then the shared rendering.
 */
export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (isClientAbort(error, request)) {
    return reply.code(400).send(errorBody('client_aborted', 'request: the client closed the connection before sending it whole'))
  }
  const mapped = domainErrorToHttp(error)
  if (mapped) {
    // the shared rendering logs 5xx HttpErrors; the cause says what actually failed
    mapped.cause = error
    return renderError(mapped as unknown as FastifyError, request, reply)
  }
  const failure = request.routeOptions?.config?.failure
  if (failure && !(error instanceof HttpError) && !isClientError(error)) {
    return renderError(routeFailureToHttp(failure, error) as unknown as FastifyError, request, reply)
  }
  return renderError(error, request, reply)
}

function renderError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof HttpError) {
    if (error.statusCode >= 500) request.log.warn({ err: error }, error.message)
    return reply.code(error.statusCode).headers(error.headers).send(errorBody(error.code, error.message, error.field))
  }
  if (hasZodFastifySchemaValidationErrors(error)) {
    const first = error.validation[0]!
    const field = fieldOf(error.validationContext, first.instancePath)
    return reply.code(400).send(errorBody('invalid_request', `${field}: ${first.message}`, field))
  }
  if (isResponseSerializationError(error)) {
    request.log.error({ err: error, issues: error.cause.issues }, 'response did not match its schema')
    return reply.code(500).send(errorBody('internal_error', 'Internal server error'))
  }
  if (isUnstorableText(error)) {
    return reply.code(400).send(errorBody('invalid_request', 'request: holds a character that cannot be stored (such as U+0000)'))
  }
  if (isDependencyOutage(error)) {
    request.log.error({ err: error }, 'dependency unavailable')
    return reply.code(503).header('retry-after', '5').send(errorBody('service_unavailable', 'A backing service is unavailable; retry later'))
  }
  const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500
  if (status >= 500) {
    request.log.error({ err: error }, 'request failed')
    return reply.code(status).send(errorBody(codeByStatus[status] ?? 'internal_error', 'Internal server error'))
  }
  const message = error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError ? `body: malformed JSON (${error.message})` : error.message
  return reply.code(status).send(errorBody(codeByStatus[status] ?? 'invalid_request', message))
}
