import { randomBytes } from 'node:crypto'
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { z } from 'zod'
import { chainsFromEnv, parseRpcUrlList, type ChainConfig } from './chains.js'

import { ConfigError } from './errors.js'
import { validateRpcUrlSchema } from './validate-rpc.js'

export { ConfigError }

const port = z.coerce
  .number({ error: 'must be a number' })
  .int('must be an integer')
  .min(0, 'must be between 0 and 65535')
  .max(65535, 'must be between 0 and 65535')

const positiveInt = z.coerce.number({ error: 'must be a number' }).int('must be an integer').positive('must be > 0')

const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' })
  .transform((value) => value === 'true' || value === '1' || value === 'yes')

function urlWithProtocols(protocols: string[]) {
  return z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol)
      } catch {
        return false
      }
    },
    { error: `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}` },
  )
}

/**
 * CURSOR_SECRET's value when it is not set: refused with NODE_ENV=production; elsewhere the daemon
 * signs with a secret of its own instead (developmentCursorSecret), never with this published one.
 */
export const PLACEHOLDER_CURSOR_SECRET = 'attribution-cursor-secret-change-me'

/** Where a development machine keeps the cursor secret it generated (gitignored), relative to the project. */
export const DEVELOPMENT_CURSOR_SECRET_FILE = '.cursor-secret'

/**
 * The secret in `path`, generated there the first time (24 random bytes, hex, readable by its owner
 * only) and the same on every later run, so cursors handed out before a restart stay valid. Two
 * processes starting at once agree: the file appears whole (written aside, then linked into place),
 * and the one that loses the race reads the winner's.
 */
export function developmentCursorSecret(path: string): { secret: string; created: boolean } {
  const existing = readSecret(path)
  if (existing) return { secret: existing, created: false }
  const draft = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`
  writeFileSync(draft, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 })
  let created = false
  try {
    linkSync(draft, path)
    created = true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  } finally {
    rmSync(draft, { force: true })
  }
  const secret = readSecret(path)
  if (!secret) throw new ConfigError(`CURSOR_SECRET: ${path} holds no secret of at least 16 characters; delete it to have a new one generated, or set CURSOR_SECRET`)
  return { secret, created }
}

function readSecret(path: string): string | undefined {
  try {
    const secret = readFileSync(path, 'utf8').trim()
    return secret.length >= 16 ? secret : undefined
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/**
 * Every setting the process reads from the environment. Defaults are chosen so
 * that a machine with PostgreSQL and Redis on their standard local ports runs
 * the service with no configuration at all.
 */
const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  DATABASE_URL: urlWithProtocols(['postgres:', 'postgresql:']).default(
    'postgres://postgres@127.0.0.1:5432/attribution',
  ),
  DATABASE_POOL_SIZE: positiveInt.default(10),
  REDIS_URL: urlWithProtocols(['redis:', 'rediss:']).default('redis://127.0.0.1:6379'),
  /** BullMQ key prefix; wrap in braces (`{attr}`) on Redis Cluster. */
  QUEUE_PREFIX: z.string().min(1, 'must not be empty').default('attr'),
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: port.default(3000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Largest accepted request body, in bytes. */
  BODY_LIMIT: positiveInt.default(1_048_576),
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  PLATFORM_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Secret that signs pagination cursors so a tampered cursor is detected. */
  CURSOR_SECRET: z.string().min(16, 'must be at least 16 characters').default(PLACEHOLDER_CURSOR_SECRET),
  /** Fastify trustProxy: unset = client IP from the socket; else true, a hop count or a list of proxy IPs/CIDRs. */
  TRUST_PROXY: z.string().optional(),
  RATE_LIMIT_MAX: positiveInt.default(20),
  RATE_LIMIT_WINDOW_MS: positiveInt.default(60_000),

  // --- per-client limits of the API (README: "Limits per client") ---
  /** Time for a request's headers, and for the whole request (body included), to arrive; then 408 and the connection closes. */
  HTTP_HEADERS_TIMEOUT_MS: positiveInt.default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: positiveInt.default(30_000),
  /** Connections one client IP (IPv6 /64) holds open at once; a trusted proxy's are not counted. */
  HTTP_MAX_CONNECTIONS_PER_IP: positiveInt.default(256),
  /** Attribution streams one client IP holds open at once (429 beyond). */
  STREAM_MAX_SUBSCRIBERS_PER_IP: positiveInt.default(10),
  /** Builder-code registrations per client IP per window (429 beyond). */
  REGISTER_RATE_LIMIT_MAX: positiveInt.default(100),
  REGISTER_RATE_LIMIT_WINDOW_MS: positiveInt.default(60_000),
  /** Validations that ask the node (not in the index, not a recent miss) per client IP per window (429 beyond). */
  VALIDATE_RATE_LIMIT_MAX: positiveInt.default(30),
  VALIDATE_RATE_LIMIT_WINDOW_MS: positiveInt.default(60_000),
  /** Validations that ask the node per window (VALIDATE_RATE_LIMIT_WINDOW_MS), all clients together (503 beyond). */
  VALIDATE_RPC_MAX: positiveInt.default(600),
  /** Validations asking the node at once per API process; a few more wait, the rest get 503. */
  VALIDATE_RPC_CONCURRENCY: positiveInt.default(4),
  /** How long a hash the node did not know is answered 404 again without asking it (0 disables). */
  VALIDATE_MISS_CACHE_MS: z.coerce.number({ error: 'must be a number' }).int('must be an integer').min(0, 'must be >= 0').default(15_000),
  /** The node validation asks, apart from the indexer's: a URL (one chain), or chainId=url pairs separated by commas. */
  VALIDATE_RPC_URL: validateRpcUrlSchema.optional(),

  // --- indexer ---
  /** The chain's RPC endpoints: one URL, or several separated by commas (work spreads by measured throughput, fails over). */
  RPC_URL: z
    .string()
    .refine((value) => parseRpcUrlList(value) !== undefined, { error: 'must be an http(s) or ws(s) URL, or several separated by commas' })
    .optional(),
  WS_URL: urlWithProtocols(['ws:', 'wss:']).optional(),
  CHAIN_ID: positiveInt.optional(),
  START_BLOCK: z.coerce.number({ error: 'must be a number' }).int('must be an integer').min(0, 'must be >= 0').default(0),
  CONFIRMATIONS: z.coerce.number({ error: 'must be a number' }).int('must be an integer').min(0, 'must be >= 0').default(12),
  POLL_INTERVAL_MS: positiveInt.default(1_000),
  /**
   * Blocks behind the head taken as final on a node that answers no `finalized` tag (chains.ts). Ranges at or
   * below the finalized block are committed in bulk (store/bulk-commit.ts); per chain: CHAINS[].finalityDepth.
   */
  FINALITY_DEPTH: z.coerce.number({ error: 'must be a number' }).int('must be an integer').min(0, 'must be >= 0').default(64),
  CHAINS: z.string().optional(),
  /** Blocks per backfill range job. */
  RANGE_SIZE: positiveInt.default(50),
  /**
   * Most attribution rows (and malformed suffixes) one range may hold. Anyone can fill blocks with 32-code
   * suffixes; a denser range is split into ranges within it, so a worker's memory and a commit statement stay
   * bounded. A single block past it is indexed whole, one such block at a time per worker. The dense bench
   * chain's ranges hold ~4,700.
   */
  MAX_RANGE_ROWS: positiveInt.default(10_000),
  /**
   * Most attribution rows a worker process holds between ranges' fetches and the ends of their commits: a range
   * starts its fetch only under it, and a commit batch takes at most a third of it (one committing, the next
   * prepared, a third forming). A sparse chain's ranges never meet it; on a dense chain it bounds the memory
   * (pipeline/rows-in-flight.ts). At least MAX_RANGE_ROWS.
   */
  ROWS_IN_FLIGHT: positiveInt.default(60_000),
  /** The follower stops enqueueing while this many ranges wait to be indexed. */
  MAX_PENDING_RANGES: positiveInt.default(200),
  WORKER_CONCURRENCY: positiveInt.default(4),
  /** BullMQ job lock: a killed worker's range is retried after this long (also the stalled-job check interval). */
  JOB_LOCK_MS: positiveInt.default(30_000),
  /**
   * Most calls per JSON-RPC batch (geth's own default limit); the throughput search starts there and keeps
   * within what the node accepts, which it learns from refusals (a node with a lower limit refuses once; bor's
   * is 100). Full blocks are bounded by RPC_BATCH_BYTES long before; light calls (a range's receipts) go in
   * one request, not one per 50: on a remote node each request is a round trip and a slot, and on a serial
   * one a fixed cost (BENCHMARKS.md).
   */
  RPC_BATCH_SIZE: positiveInt.default(1000),
  /** Most bytes per batch answer (estimated from earlier answers), so large blocks go a few at a time. */
  RPC_BATCH_BYTES: positiveInt.default(10 * 1_048_576),
  /**
   * Most bytes one answer may have. A node or proxy that streams an endless (or gigabyte) body is cut off
   * there instead of filling memory: the batch is asked again in halves, and a single call still over it
   * fails as any call that cannot be fetched (a stuck range, shown in the status). Above any block of today's
   * chains (300M gas of zero-byte calldata at 4 gas a byte is 150 MB of hex); 8 requests in flight of it fit memory.
   */
  RPC_MAX_ANSWER_BYTES: positiveInt.default(256 * 1_048_576),
  /**
   * Requests in flight per node at the start (half RPC_MAX_CONCURRENCY unless set); the throughput search moves
   * it between 1 and RPC_MAX_CONCURRENCY; a timeout halves it, a 429 caps it one below the requests the node
   * refused. A backfill gives the search only a few judged windows, and a start at the most in flight spent them
   * stepping down on nodes where more requests cost more: started at 4 of 8, the fast and serial profiles gained
   * 14% and 4% and the remote one held (alternated runs, BENCHMARKS.md).
   */
  RPC_CONCURRENCY: positiveInt.optional(),
  RPC_MAX_CONCURRENCY: positiveInt.default(8),
  /** Attempts per call before the range fails (and records why). */
  RPC_MAX_ATTEMPTS: positiveInt.default(5),
  /** A range that has failed this many times is reported stuck (gauge, error log, /readyz, /v1/indexer/status). */
  STUCK_RANGE_ATTEMPTS: positiveInt.default(5),
  RPC_TIMEOUT_MS: positiveInt.default(10_000),
  /**
   * The HTTP client of http:// RPC URLs: `socket`, the project's reader (answers land in a reused buffer with no
   * copy: BENCHMARKS.md), or `undici`, the escape hatch for a node or proxy it does not read (a transfer coding
   * other than chunked, refused as `unsupported_framing`). https:// URLs always go over undici.
   */
  RPC_HTTP_CLIENT: z.enum(['socket', 'undici'], { error: 'must be socket or undici' }).default('socket'),
  /** How far back (in blocks) a UserOperation hash is searched over RPC. */
  VALIDATE_LOG_WINDOW: positiveInt.default(50_000),
  /** How long a validation answered from the index is reused for the same hash (0 disables). */
  VALIDATE_CACHE_MS: z.coerce.number({ error: 'must be a number' }).int('must be an integer').min(0, 'must be >= 0').default(2_000),
  /**
   * Once a full collection leaves over 80 MiB in use, or a backfill's rows waiting for their commit pass 20,000, how
   * far (percent) the heap may grow past what the last collection kept before the next one (bin/heap-growth.ts). 0 leaves V8's own factor, up to 4× when the process allocates fast; a smaller heap
   * always grows at V8's pace.
   */
  HEAP_GROWTH_PERCENT: z.coerce.number({ error: 'must be a number' }).int('must be an integer').min(0, 'must be >= 0').max(400, 'must be <= 400').default(50),
  /** Start a local anvil devnet with generated traffic when no RPC_URL is set. */
  DEVNET: booleanFlag.default(true),
  DEVNET_PORT: port.default(8545),
  /** Also serve /metrics on this port (for roles without the API: follower, worker). */
  METRICS_PORT: port.optional(),
  /** How long summary, leaderboard and code totals are reused at most; any commit or rollback drops them at once (0 disables). */
  ANALYTICS_CACHE_MS: z.coerce.number({ error: 'must be a number' }).int('must be an integer').min(0, 'must be >= 0').default(5_000),
  /** Server-sent-event subscribers one API process serves at once; more are answered 503. */
  STREAM_MAX_SUBSCRIBERS: positiveInt.default(1_000),
  /** Heartbeat comment interval of the attribution stream (keeps proxies from closing idle streams). */
  STREAM_HEARTBEAT_MS: positiveInt.default(15_000),
  /** How long start-up waits for PostgreSQL, Redis and each chain's RPC before exiting with status 78. */
  STARTUP_TIMEOUT_MS: z.coerce.number({ error: 'must be a number' }).int('must be an integer').min(0, 'must be >= 0').default(30_000),
  /**
   * How long of that start-up waits for a chain's RPC at most: a database or Redis coming up beside the
   * service is worth half a minute, a wrong or dead RPC_URL is usually a typo or a provider down, said sooner.
   */
  RPC_STARTUP_TIMEOUT_MS: z.coerce.number({ error: 'must be a number' }).int('must be an integer').min(0, 'must be >= 0').default(10_000),
}).superRefine((env, context) => {
  // Node refuses a headers timeout longer than the request's
  if (env.HTTP_HEADERS_TIMEOUT_MS > env.HTTP_REQUEST_TIMEOUT_MS) {
    context.addIssue({ code: 'custom', path: ['HTTP_HEADERS_TIMEOUT_MS'], message: `must not exceed HTTP_REQUEST_TIMEOUT_MS (${env.HTTP_REQUEST_TIMEOUT_MS})` })
  }
  // a bound below one range's rows would hold fewer rows than a single range brings
  if (env.ROWS_IN_FLIGHT < env.MAX_RANGE_ROWS) {
    context.addIssue({ code: 'custom', path: ['ROWS_IN_FLIGHT'], message: `must be at least MAX_RANGE_ROWS (${env.MAX_RANGE_ROWS})` })
  }
  // batches are sized to answer RPC_BATCH_BYTES: a cap below it would cut the answers of ordinary batches
  if (env.RPC_MAX_ANSWER_BYTES < env.RPC_BATCH_BYTES) {
    context.addIssue({ code: 'custom', path: ['RPC_MAX_ANSWER_BYTES'], message: `must be at least RPC_BATCH_BYTES (${env.RPC_BATCH_BYTES})` })
  }
})

export type Env = z.infer<typeof envSchema>
export type Config = Env & { chains: ChainConfig[] }

/** Formats the first problem of each variable as `NAME: reason`. */
function describeIssues(issues: z.core.$ZodIssue[]): string {
  const lines = new Map<string, string>()
  for (const issue of issues) {
    const name = String(issue.path[0] ?? 'environment')
    if (!lines.has(name)) lines.set(name, `${name}: ${issue.message}`)
  }
  return [...lines.values()].join('; ')
}

/**
 * Parses the environment into a configuration, or throws a ConfigError whose
 * message names every bad variable and why.
 */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined && value !== ''))
  const parsed = envSchema.safeParse(cleaned)
  if (!parsed.success) throw new ConfigError(`Invalid configuration: ${describeIssues(parsed.error.issues)}`)
  const env = parsed.data
  const chains = chainsFromEnv(env, (path) => readFileSync(path, 'utf8'))
  return { ...env, chains }
}
