import type { IncomingMessage } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Gauge, Histogram, type Registry } from 'prom-client'

/**
 * Guards for the whole API: what one request may cost, and the numbers that
 * show whether any did cost too much.
 *
 * One process answers every client on one event loop, so a request that
 * computes for a second stalls every other client for that second (issue 11:
 * a 60,000-emoji title froze `/healthz` for 12 s). Validation is written to
 * cost what its limits allow; these guards bound what reaches it and
 * measure the rest.
 */

/**
 * Body limit of every route that takes a small JSON object (an address, a
 * hash, a name, a pin): 16 KiB holds any valid one many times over. Only the
 * notification send, whose 1,000 addresses and texts need room, keeps the
 * configured BODY_LIMIT, and its validation is bounded per field.
 */
export const SMALL_BODY_LIMIT = 16_384

/** Applies SMALL_BODY_LIMIT (or BODY_LIMIT when smaller) to every route registered after it that sets no limit of its own. */
export function limitBodies(app: FastifyInstance, bodyLimit: number) {
  app.addHook('onRoute', (route) => {
    if (route.bodyLimit === undefined) route.bodyLimit = Math.min(SMALL_BODY_LIMIT, bodyLimit)
  })
}

/** What a refused body is still read for before its 413 goes out (drainRefusedBodies). */
const DRAIN_MOST_BYTES = 8 * 1024 * 1024
const DRAIN_MOST_MS = 2_000

/**
 * A body refused for its size is read to its end (and thrown away) before
 * the 413 goes out. An HTTP client writes its whole body before it reads
 * the answer; a connection closed under it fails that write (EPIPE, a reset)
 * and the client sees a broken connection where the 413 should have told it
 * why. Past DRAIN_MOST_BYTES (declared or read) or DRAIN_MOST_MS the answer
 * goes out and the connection closes as before: an upload of gigabytes is
 * not read for the sake of its error.
 */
export function drainRefusedBodies(app: FastifyInstance) {
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode === 413) await drainBody(request.raw)
    return payload
  })
}

function drainBody(raw: IncomingMessage): Promise<void> {
  if (raw.complete || raw.destroyed || Number(raw.headers['content-length']) > DRAIN_MOST_BYTES) return Promise.resolve()
  return new Promise((resolve) => {
    let read = 0
    const onData = (chunk: Buffer) => {
      read += chunk.length
      if (read > DRAIN_MOST_BYTES) finish()
    }
    const finish = () => {
      clearTimeout(timer)
      raw.off('data', onData).off('end', finish).off('close', finish).off('error', finish)
      resolve()
    }
    const timer = setTimeout(finish, DRAIN_MOST_MS)
    raw.on('data', onData).on('end', finish).on('close', finish).on('error', finish)
    raw.resume()
  })
}

/**
 * JSON bodies nested deeper than this are refused before JSON.parse: no
 * request of this API nests past 3 levels, and parsing half a million nested
 * arrays (a 1 MiB body) took 2 s of CPU.
 */
export const MAX_JSON_DEPTH = 32

/** Whether `text` nests arrays and objects deeper than `max`, in one pass that stops as soon as it does. */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 34) {
      // skip the string, escapes included
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i)
        if (s === 92) i++
        else if (s === 34) break
      }
    } else if (c === 91 || c === 123) {
      if (++depth > max) return true
    } else if (c === 93 || c === 125) depth--
  }
  return false
}

/** Fastify's own JSON parser (prototype-poisoning checks and all), behind the depth cap. */
export function limitJsonDepth(app: FastifyInstance) {
  const parse = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (nestsDeeperThan(body as string, MAX_JSON_DEPTH)) {
      const error = new Error(`body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`) as Error & { statusCode: number }
      error.statusCode = 400
      return done(error, undefined)
    }
    parse(request, body as string, done)
  })
}

/** The event loop's busy milliseconds when each request arrived. */
const busyAtStart = new WeakMap<FastifyRequest, number>()
/** performance.now() when each request arrived: its latency's start. */
const arrivedAt = new WeakMap<FastifyRequest, number>()

/**
 * Per-request CPU (`http_request_cpu_seconds`, by method and route) and the
 * event loop's utilisation (`nodejs_eventloop_utilization`, since the last
 * scrape) next to prom-client's default `nodejs_eventloop_lag_*` gauges.
 *
 * A request's CPU is the event loop's busy time from its arrival to its
 * answer: the time it held every other client. It leaves out the garbage
 * collector's and libuv's helper threads (process CPU counted those and
 * could exceed the wall time), and is exact when requests do not overlap
 * (how the hostile-input suite sends them), an upper bound when they do.
 */
export function measureRequests(app: FastifyInstance, registry: Registry) {
  const cpu = new Histogram({
    name: 'http_request_cpu_seconds',
    help: 'Event-loop busy time from a request’s arrival to its answer (exact when requests do not overlap)',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  })
  const slowest = new Gauge({
    name: 'http_request_cpu_max_seconds',
    help: 'Most CPU any one request of the route took since the process started',
    labelNames: ['method', 'route'],
    registers: [registry],
  })
  // the latency operators graph and alert on (deploy/): wall time, status by class to keep the label set small
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Wall time from a request’s arrival to its answer, by method, route and status class (an event stream counts its whole life)',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  })
  const slowestByRoute = new Map<string, number>()
  let last = performance.eventLoopUtilization()
  new Gauge({
    name: 'nodejs_eventloop_utilization',
    help: 'Share of time the event loop was busy since the previous scrape (0..1)',
    registers: [registry],
    collect() {
      const now = performance.eventLoopUtilization()
      this.set(performance.eventLoopUtilization(now, last).utilization)
      last = now
    },
  })
  app.addHook('onRequest', async (request) => {
    busyAtStart.set(request, performance.eventLoopUtilization().active)
    arrivedAt.set(request, performance.now())
  })
  app.addHook('onResponse', async (request, reply) => {
    const start = busyAtStart.get(request)
    if (start === undefined) return
    // unmatched URLs share one label: the route table bounds the label set
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched' }
    const arrived = arrivedAt.get(request)
    if (arrived !== undefined) duration.observe({ ...labels, status: `${Math.floor(reply.statusCode / 100)}xx` }, (performance.now() - arrived) / 1_000)
    const seconds = (performance.eventLoopUtilization().active - start) / 1_000
    cpu.observe(labels, seconds)
    const key = `${labels.method} ${labels.route}`
    if (seconds > (slowestByRoute.get(key) ?? 0)) {
      slowestByRoute.set(key, seconds)
      slowest.set(labels, seconds)
    }
  })
}
