import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { rpcUrlsOf, type ChainConfig } from '../config/chains.js'
import type { Config } from '../config/env.js'
import { REPEATED_LOG_WINDOW_MS, type Logger } from '../logger.js'
import { errorCode, hostPort, StartupError } from './startup-error.js'

export { errorCode, StartupError }

export const STARTUP_EXIT_CODE = 78

/** One external service the process cannot run without, and how to reach it once. */
export type Dependency = {
  component: 'postgres' | 'redis' | 'rpc'
  /** The setting that points at it, named in every message: DATABASE_URL, REDIS_URL, RPC_URL, CHAINS[1].rpcUrl. */
  variable: string
  /** host:port only: URLs may carry passwords or provider keys. */
  address: string
  /** Resolves when the service answers within `withinMs` (at most); rejects with an error whose code says why not. */
  probe(withinMs: number): Promise<void>
  /** A shorter bound than the start-up's for this one, and the setting that gives it (RPC_STARTUP_TIMEOUT_MS). */
  ownTimeout?: { ms: number; setting: string }
}

/** A dependency still unreachable when start-up gives up; `message` is `VARIABLE: component at host:port (CODE)`. */
class Unreachable extends StartupError {}

/** A failure that waiting will not cure (wrong password, wrong chain): stop at once. */
class PermanentProblem extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message)
  }
}

function postgresDependency(url: string): Dependency {
  return {
    component: 'postgres',
    variable: 'DATABASE_URL',
    address: hostPort(url, 5432),
    async probe() {
      // each driver is loaded by the probe that uses it: `validate` and `migrate` never load ioredis
      const { default: postgres } = await import('postgres')
      const sql = postgres(url, { max: 1, connect_timeout: 3, onnotice: () => {}, idle_timeout: 1 })
      try {
        await sql`select 1`
      } catch (error) {
        const code = errorCode(error)
        // 3D000: the server answers but the database does not exist yet; `migrate` creates it
        if (code === '3D000') return
        // 28xxx: authentication or authorization; no amount of waiting fixes a password
        if (code.startsWith('28')) throw new PermanentProblem((error as Error).message, code)
        throw error
      } finally {
        await sql.end({ timeout: 1 }).catch(() => {})
      }
    },
  }
}

function redisDependency(url: string): Dependency {
  return {
    component: 'redis',
    variable: 'REDIS_URL',
    address: hostPort(url, 6379),
    async probe() {
      const { Redis } = await import('ioredis')
      const redis = new Redis(url, { lazyConnect: true, connectTimeout: 3_000, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false })
      // connect() rejects with "Connection is closed."; the socket's own error (ECONNREFUSED …) comes as an event
      let socketError: Error | undefined
      redis.on('error', (error: Error) => {
        socketError ??= error
      })
      try {
        await redis.connect()
        await redis.ping()
      } catch (error) {
        if (socketError && errorCode(error) === 'UNKNOWN') throw socketError
        const message = (error as Error).message
        if (/NOAUTH|WRONGPASS|invalid password/i.test(message)) throw new PermanentProblem(message, message.split(' ')[0]!)
        throw error
      } finally {
        redis.disconnect()
      }
    },
  }
}

/** One JSON-RPC attempt takes at most this long (or what is left of the wait, but at least SHORTEST_ATTEMPT_MS). */
const RPC_PROBE_MS = 5_000
const SHORTEST_ATTEMPT_MS = 1_000

async function probeJsonRpc(url: string, withinMs: number): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
    signal: AbortSignal.timeout(Math.min(RPC_PROBE_MS, withinMs)),
  })
  if (!response.ok) throw Object.assign(new Error(`HTTP ${response.status}`), { code: `HTTP_${response.status}` })
  const body = (await response.json().catch(() => undefined)) as { result?: unknown } | undefined
  if (typeof body?.result !== 'string') throw Object.assign(new Error('not a JSON-RPC answer to eth_chainId'), { code: 'BAD_RESPONSE' })
}

/** A websocket node: a TCP connection to it is what can be checked without a client library. */
function probeTcp(address: string, withinMs: number): Promise<void> {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))]
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, timeout: Math.min(3_000, withinMs) })
    socket.once('connect', () => {
      socket.destroy()
      resolve()
    })
    socket.once('timeout', () => {
      socket.destroy()
      reject(Object.assign(new Error('connection timed out'), { code: 'ETIMEDOUT' }))
    })
    socket.once('error', reject)
  })
}

function probeRpcUrl(url: string, withinMs: number): Promise<void> {
  const websocket = /^wss?:/.test(url)
  return websocket ? probeTcp(rpcAddress(url), withinMs) : probeJsonRpc(url, withinMs)
}

const rpcAddress = (url: string) => hostPort(url, url.startsWith('https:') || url.startsWith('wss:') ? 443 : 80)

/** A chain's RPC: reachable when any of its endpoints answers (the pool routes around the others). */
function rpcDependency(chain: ChainConfig, variable: string, timeoutMs: number): Dependency {
  const urls = rpcUrlsOf(chain)
  return {
    component: 'rpc',
    variable,
    address: urls.map(rpcAddress).join(','),
    probe: (withinMs) => Promise.any(urls.map((url) => probeRpcUrl(url, withinMs))).catch((error: AggregateError) => Promise.reject(error.errors[0])),
    ownTimeout: { ms: timeoutMs, setting: 'RPC_STARTUP_TIMEOUT_MS' },
  }
}

/** The dependencies of these roles: Postgres and Redis always, each configured chain's node when indexing. */
export function dependenciesOf(config: Config, options: { indexing: boolean; redis?: boolean }): Dependency[] {
  const dependencies = [postgresDependency(config.DATABASE_URL)]
  if (options.redis !== false) dependencies.push(redisDependency(config.REDIS_URL))
  if (options.indexing) {
    config.chains.forEach((chain, index) =>
      dependencies.push(rpcDependency(chain, config.CHAINS ? `CHAINS[${index}].${chain.rpcUrls ? 'rpcUrls' : 'rpcUrl'}` : 'RPC_URL', config.RPC_STARTUP_TIMEOUT_MS)),
    )
  }
  return dependencies
}

const FIRST_RETRY_MS = 250
const LONGEST_RETRY_MS = 5_000
/**
 * Start-up logs one line per dependency per window, however many attempts it holds: the
 * logger's own window for repeated warnings (a shorter one here would only be swallowed by it).
 */
const LOG_WINDOW_MS = REPEATED_LOG_WINDOW_MS

/** How long one dependency is waited for, and the setting that says so (named in the message when it gives up). */
function boundOf(dependency: Dependency, timeoutMs: number): { ms: number; setting: string } {
  const own = dependency.ownTimeout
  return own && own.ms < timeoutMs ? own : { ms: timeoutMs, setting: 'STARTUP_TIMEOUT_MS' }
}

/** A dependency given up on: the start-up ends then, and says after how long and by which setting. */
class GaveUp extends Unreachable {
  constructor(
    message: string,
    readonly bound: { ms: number; setting: string },
  ) {
    super(message)
  }
}

async function waitFor(dependency: Dependency, started: number, timeoutMs: number, logger: Logger, givingUp: AbortController): Promise<void> {
  const bound = boundOf(dependency, timeoutMs)
  const deadline = started + bound.ms
  let delay = FIRST_RETRY_MS
  let lastLogAt = 0
  let attempts = 0
  for (;;) {
    attempts++
    try {
      // a single attempt (timeoutMs 0) gets an attempt's usual time; a wait, what is left of it but never so
      // little that the last attempt's own timeout hides why the others failed (ECONNREFUSED, HTTP_503 …)
      await dependency.probe(timeoutMs === 0 ? RPC_PROBE_MS : Math.max(SHORTEST_ATTEMPT_MS, deadline - Date.now()))
      if (attempts > 1) logger.info({ component: dependency.component, variable: dependency.variable, address: dependency.address, attempts }, `${dependency.variable} reachable`)
      return
    } catch (error) {
      const code = errorCode(error)
      const where = `${dependency.variable}: ${dependency.component} at ${dependency.address}`
      if (error instanceof PermanentProblem) throw new StartupError(`${where} refused the connection (${code}): ${error.message}`)
      const remaining = deadline - Date.now()
      // another dependency's bound ended the start-up: this one is reported as it stands
      if (givingUp.signal.aborted) throw new Unreachable(`${where} (${code})`)
      if (remaining <= 0 || timeoutMs === 0) {
        givingUp.abort()
        throw new GaveUp(`${where} (${code})`, bound)
      }
      if (Date.now() - lastLogAt >= LOG_WINDOW_MS) {
        lastLogAt = Date.now()
        logger.warn(
          { component: dependency.component, variable: dependency.variable, address: dependency.address, code, attempts, gives_up_in_s: Math.ceil(remaining / 1000) },
          `waiting for ${dependency.variable}`,
        )
      }
      // the attempt after the backoff, or sooner when the next waiting line is due: a line comes every 10 s
      // (plus one attempt's time), never skipped by a backoff step that would have slept past it
      const untilNextLine = Math.max(0, lastLogAt + LOG_WINDOW_MS - Date.now())
      const aborted = await sleep(Math.min(delay, remaining, untilNextLine), false, { signal: givingUp.signal }).catch(() => true)
      if (aborted) throw new Unreachable(`${where} (${code})`)
      delay = Math.min(delay * 2, LONGEST_RETRY_MS)
    }
  }
}

/**
 * Waits, with backoff, until every dependency answers: at most `timeoutMs`
 * (0: a single attempt, as the one-shot commands do), a chain's RPC at most its
 * own shorter bound (RPC_STARTUP_TIMEOUT_MS). The first dependency given up on
 * ends the wait: throws a StartupError naming it and every other one still
 * unreachable, with variable, address and code.
 */
export async function waitForDependencies(dependencies: readonly Dependency[], { timeoutMs, logger }: { timeoutMs: number; logger: Logger }): Promise<void> {
  const started = Date.now()
  const givingUp = new AbortController()
  const results = await Promise.allSettled(dependencies.map((dependency) => waitFor(dependency, started, timeoutMs, logger, givingUp)))
  const problems = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as Error] : []))
  if (problems.length === 0) return
  const unexpected = problems.find((problem) => !(problem instanceof StartupError))
  if (unexpected) throw unexpected
  const refused = problems.find((problem) => !(problem instanceof Unreachable))
  if (refused) throw refused
  const list = problems.map((problem) => problem.message).join('; ')
  if (timeoutMs === 0) throw new StartupError(`unreachable: ${list}`)
  const bound = problems.find((problem): problem is GaveUp => problem instanceof GaveUp)?.bound ?? { ms: timeoutMs, setting: 'STARTUP_TIMEOUT_MS' }
  throw new StartupError(`still unreachable after ${Math.round(bound.ms / 1000)} s (${bound.setting}=${bound.ms}), exiting: ${list}`)
}
