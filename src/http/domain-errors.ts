import { InvalidWindowError } from '../analytics/window.js'
import { InvalidCursorError } from '../contract/cursor-error.js'
import { InvalidAppUrlError } from '../notifications/app-url.js'
import {
  ApiKeyNotFoundError,
  ApiKeyRejectedError,
  AppNotInProjectError,
  AppUrlTakenError,
  DeliveryQueueUnavailableError,
  KeyProjectDeletedError,
  NotificationDomainError,
  PreferencesUnavailableError,
  ProjectNotFoundError,
  ProjectNotWhitelistedError,
} from '../notifications/errors.js'
import { TooManySubscribersError } from '../stream/hub.js'
import { ChainSelectionError, HashNotFoundError, RpcTimeoutError, RpcUnavailableError, ValidationBusyError } from '../validation/errors.js'
import { badRequest, HttpError, notFound } from './http-error.js'

/**
 * The one table from the domain's errors to HTTP statuses. The domain
 * (analytics, notifications, validation, the stream) throws its own errors
 * and knows nothing of HTTP; routes never catch them; the server's one error
 * handler asks here. An error not listed is not a domain error.
 */
export function domainErrorToHttp(error: unknown): HttpError | undefined {
  if (error instanceof InvalidCursorError) return badRequest(error.field, error.reason)
  if (error instanceof InvalidWindowError) return badRequest(error.field, error.reason)
  if (error instanceof InvalidAppUrlError) return badRequest('app_url', error.message)
  if (error instanceof NotificationDomainError) return notificationError(error)
  if (error instanceof ChainSelectionError) return badRequest(error.field, error.reason)
  if (error instanceof HashNotFoundError) return notFound(error.message)
  if (error instanceof RpcTimeoutError) return new HttpError(504, 'gateway_timeout', error.message)
  if (error instanceof RpcUnavailableError) return new HttpError(502, 'bad_gateway', error.message)
  if (error instanceof ValidationBusyError) return unavailable(error.message, error.retryAfterMs)
  if (error instanceof TooManySubscribersError) return unavailable(`stream: ${error.message}`, 5_000)
  return undefined
}

/** 503 with the shared body and `Retry-After`: this server cannot take it now, through no fault of the client. */
function unavailable(message: string, retryAfterMs: number): HttpError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000))
  return new HttpError(503, 'service_unavailable', `${message}; retry in ${seconds} s`, undefined, { 'retry-after': String(seconds) })
}

function notificationError(error: NotificationDomainError): HttpError | undefined {
  if (error instanceof ApiKeyRejectedError) return new HttpError(401, error.code, error.message)
  if (error instanceof KeyProjectDeletedError) return new HttpError(404, error.code, error.message)
  if (error instanceof AppNotInProjectError || error instanceof ProjectNotWhitelistedError) return new HttpError(403, error.code, error.message)
  if (error instanceof AppUrlTakenError) return new HttpError(409, error.code, error.message, 'app_url')
  if (error instanceof PreferencesUnavailableError) return new HttpError(500, error.code, error.message)
  if (error instanceof DeliveryQueueUnavailableError) return new HttpError(503, error.code, error.message, undefined, { 'retry-after': '5' })
  if (error instanceof ProjectNotFoundError || error instanceof ApiKeyNotFoundError) return new HttpError(404, error.code, error.message)
  return undefined
}

/**
 * What a route's failures mean when they are not the client's fault nor a
 * known domain error (Fastify route option `config.failure`). The app
 * status endpoint's contract names any store failure, key lookup included,
 * a 500 "status lookup failed in the preferences store".
 */
export type RouteFailure = 'preferences_unavailable'

const routeFailures: Record<RouteFailure, (cause: unknown) => NotificationDomainError> = {
  preferences_unavailable: (cause) => new PreferencesUnavailableError(cause),
}

/** The HTTP error a route's unexpected failure stands for; the cause stays attached for the log. */
export function routeFailureToHttp(failure: RouteFailure, cause: unknown): HttpError {
  const mapped = notificationError(routeFailures[failure](cause))!
  mapped.cause = cause
  return mapped
}
