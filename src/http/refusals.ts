import { Counter, Registry } from 'prom-client'
import { HttpError } from './errors.js'

/**
 * Every per-client and per-process limit of the API that can refuse a
 * request, by the name `http_limit_refusals_total{limit}` reports it under.
 * An operator reads there which limit is biting (an attack, or a setting too
 * tight for honest traffic); README's configuration table names the setting
 * of each.
 */
export const REFUSAL_LIMITS = [
  /** HTTP_MAX_CONNECTIONS_PER_IP: a connection over the client's open connections. */
  'connections_per_client',
  /** HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS: headers or a body that did not arrive in time (408). */
  'request_timeout',
  /** STREAM_MAX_SUBSCRIBERS_PER_IP: a stream over the client's open streams (429). */
  'stream_per_client',
  /** STREAM_MAX_SUBSCRIBERS: a stream over the process's open streams (503). */
  'stream_total',
  /** REGISTER_RATE_LIMIT_*: registrations over the client's window (429). */
  'register_per_client',
  /** VALIDATE_RATE_LIMIT_*: validations the client asked the node for, over its window (429). */
  'validate_per_client',
  /** VALIDATE_RPC_MAX: validations asked of the node by all clients together, over the window (503). */
  'validate_node_total',
  /** VALIDATE_RPC_CONCURRENCY: node lookups waiting for a slot, over what may wait (503). */
  'validate_node_busy',
  /** RATE_LIMIT_*: requests to the app notification endpoints over the client's window (429). */
  'notifications_per_client',
] as const

export type RefusalLimit = (typeof REFUSAL_LIMITS)[number]

/**
 * Counts refusals by limit (every limit starts at 0 so a scrape shows the
 * whole set), and client aborts. Without a registry the counts are kept but
 * not served.
 */
export function createRefusalCounter(registry: Registry | undefined) {
  const counter = new Counter({
    name: 'http_limit_refusals_total',
    help: 'Requests and connections refused by a per-client or per-process limit, by limit',
    labelNames: ['limit'],
    registers: [registry ?? new Registry()],
  })
  for (const limit of REFUSAL_LIMITS) counter.inc({ limit }, 0)
  const aborts = new Counter({
    name: 'http_client_aborts_total',
    help: 'Requests whose client closed the connection before sending them whole (logged at debug, never as an outage)',
    registers: [registry ?? new Registry()],
  })
  return {
    refused: (limit: RefusalLimit) => counter.inc({ limit }),
    clientAborted: () => aborts.inc(),
    /** The count of one limit so far (tests and logs). */
    count: async (limit: RefusalLimit) => (await counter.get()).values.find((value) => value.labels.limit === limit)?.value ?? 0,
  }
}

export type RefusalCounter = ReturnType<typeof createRefusalCounter>

/** Whole seconds a client should wait, at least 1. */
export const retryAfterSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000))

/**
 * The 429 of every per-client limit: the shared error body (`rate_limited`,
 * the message saying which limit and when to retry) and `Retry-After`.
 */
export function tooManyRequests(message: string, retryAfterMs: number, headers: Record<string, string | number> = {}): HttpError {
  const retryAfter = String(retryAfterSeconds(retryAfterMs))
  const all = Object.fromEntries(Object.entries({ ...headers, 'retry-after': retryAfter }).map(([name, value]) => [name, String(value)]))
  return new HttpError(429, 'rate_limited', `${message}; retry in ${retryAfter} s`, undefined, all)
}
