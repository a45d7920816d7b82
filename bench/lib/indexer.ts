import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import { Redis } from 'ioredis'
import type { CodeTotals } from '../../devnet/ledger.js'
import type { ChainTruth } from '../chain/truth.js'
import { FeatureMissing } from './bench.js'
import { freePort } from '../../devnet/free-port.js'
import { memoryOf, stopProcess, spawnTs } from './process.js'
import { resultsDir } from './report.js'

/**
 * Drives the indexer the way an operator runs it — `node bin/attribution.mjs
 * start` as its own process, configured by environment only — and reads its
 * progress and totals from Postgres (tables `ranges`, `code_daily_totals`,
 * `attributions`), never through its internals.
 */

const repoRoot = fileURLToPath(new URL('../../', import.meta.url))
const cliScript = `${repoRoot}bin/attribution.mjs`
export const LOCAL_DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
export const LOCAL_REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'

/** Throws FeatureMissing (the bench reports "skipped") when the indexer is not in this checkout yet. */
export function requireIndexer(): void {
  for (const folder of ['src/pipeline', 'src/follower']) {
    if (!existsSync(`${repoRoot}${folder}`)) throw new FeatureMissing(`the indexer is not built yet (${folder} does not exist)`)
  }
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`
}

export type BenchDatabase = { url: string; name: string; sql: postgres.Sql; drop(): Promise<void> }

function databaseUrlNamed(name: string): string {
  const url = new URL(LOCAL_DATABASE_URL)
  url.pathname = `/${name}`
  return url.toString()
}

/**
 * The locale bench databases are created with (BENCH_DB_LOCALE, e.g.
 * en_US.UTF-8, the default of many installs and hosted services); unset,
 * the server's default. The locale must exist on the database's machine.
 */
function benchDatabaseLocale(): string | undefined {
  const locale = process.env.BENCH_DB_LOCALE
  if (locale === undefined || locale === '') return undefined
  if (!/^[\w.@-]+$/.test(locale)) throw new Error(`BENCH_DB_LOCALE: a locale name such as en_US.UTF-8, got ${JSON.stringify(locale)}`)
  return locale
}

/** A database created for one run and dropped after it (only ever one this bench created). */
export async function createBenchDatabase(prefix: string): Promise<BenchDatabase> {
  const name = uniqueName(prefix)
  const admin = postgres(LOCAL_DATABASE_URL, { max: 1, onnotice: () => {} })
  const locale = benchDatabaseLocale()
  try {
    await admin.unsafe(`create database "${name}"${locale ? ` template template0 locale '${locale}'` : ''}`)
  } finally {
    await admin.end({ timeout: 5 })
  }
  const url = databaseUrlNamed(name)
  const sql = postgres(url, { max: 2, onnotice: () => {} })
  return {
    url,
    name,
    sql,
    async drop() {
      await sql.end({ timeout: 5 })
      const dropper = postgres(LOCAL_DATABASE_URL, { max: 1, onnotice: () => {} })
      try {
        await dropper.unsafe(`drop database if exists "${name}" with (force)`)
      } finally {
        await dropper.end({ timeout: 5 })
      }
    },
  }
}

/** Deletes the keys of one queue prefix (the bench's own, unique per run): never anything else. */
export async function deleteRedisPrefix(prefix: string): Promise<void> {
  const redis = new Redis(LOCAL_REDIS_URL, { maxRetriesPerRequest: 1 })
  try {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
      if (keys.length > 0) await redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
}

export type IndexerProcess = {
  pid: number
  url: string
  logPath: string
  memory(): { rss: number; peak: number } | undefined
  exited(): boolean
  stop(): Promise<void>
  /** Last lines of the indexer's output, for error messages. */
  tail(lines?: number): string
}

export type IndexerSettings = {
  rpcUrl: string
  chainId: number
  databaseUrl: string
  queuePrefix: string
  /** Unset: the indexer's default. */
  workerConcurrency?: number
  rangeSize?: number
  rpcBatchSize?: number
  pollIntervalMs: number
  /** Extra environment (overrides). */
  env?: Record<string, string>
  /** `start` (everything in one process) unless told otherwise. */
  command?: 'start' | 'follower' | 'worker' | 'api'
  /** Write a V8 CPU profile of the indexer here when set. */
  cpuProfileDir?: string
  label: string
}

export async function startIndexerProcess(settings: IndexerSettings): Promise<IndexerProcess> {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'production',
    RPC_URL: settings.rpcUrl,
    CHAIN_ID: String(settings.chainId),
    START_BLOCK: '0',
    CONFIRMATIONS: '0',
    DEVNET: 'false',
    DATABASE_URL: settings.databaseUrl,
    REDIS_URL: LOCAL_REDIS_URL,
    QUEUE_PREFIX: settings.queuePrefix,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    // production refuses the placeholder secret; a bench's service needs one of its own
    CURSOR_SECRET: randomBytes(24).toString('hex'),
    ...(settings.workerConcurrency !== undefined && { WORKER_CONCURRENCY: String(settings.workerConcurrency) }),
    ...(settings.rangeSize !== undefined && { RANGE_SIZE: String(settings.rangeSize) }),
    ...(settings.rpcBatchSize !== undefined && { RPC_BATCH_SIZE: String(settings.rpcBatchSize) }),
    POLL_INTERVAL_MS: String(settings.pollIntervalMs),
    ...settings.env,
  }
  const nodeArgs = settings.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfileDir}`] : []
  const logDir = `${resultsDir}logs/`
  mkdirSync(logDir, { recursive: true })
  const logPath = `${logDir}${settings.label}.log`
  const log = createWriteStream(logPath)
  // bin/attribution.mjs registers tsx itself; --import tsx is harmless and keeps one spawn helper
  const child = spawnTs(cliScript, [settings.command ?? 'start'], { env, nodeArgs, inheritStderr: false })
  child.stdout!.pipe(log)
  child.stderr!.pipe(log)
  return {
    pid: child.pid!,
    url: `http://127.0.0.1:${port}`,
    logPath,
    memory: () => memoryOf(child.pid!),
    exited: () => child.exitCode !== null || child.signalCode !== null,
    stop: async () => {
      await stopProcess(child, 20_000)
      log.end()
    },
    tail(lines = 20) {
      try {
        return readFileSync(logPath, 'utf8').trim().split('\n').slice(-lines).join('\n')
      } catch {
        return ''
      }
    },
  }
}

/**
 * Highest block H such that ranges marked done cover [startBlock, H] without
 * a gap: the contract of the `ranges` table. Reads only ranges past what was
 * already known, through the key (ranges tile the chain: the one holding
 * `through` ends there), so polling a long backfill stays cheap.
 */
export function createProgressReader(sql: postgres.Sql, chainId: number, startBlock = 0) {
  let through = startBlock - 1
  return async function indexedThrough(): Promise<number> {
    let rows: Array<{ from_block: string; to_block: string }>
    try {
      rows = await sql`
        select from_block, to_block from ranges
        where chain_id = ${chainId} and status = 'done' and from_block > ${through}
        order by from_block`
    } catch (error) {
      // 42P01: the indexer has not created its tables yet
      if ((error as { code?: string }).code === '42P01') return through
      throw error
    }
    for (const row of rows) {
      if (Number(row.from_block) > through + 1) break
      through = Math.max(through, Number(row.to_block))
    }
    return through
  }
}

export type Verification = {
  equal: boolean
  codes: number
  attributionRows: { index: number; truth: number }
  malformed: { index: number | null; truth: number }
  mismatches: string[]
}

/** Per code totals as the index keeps them, in the ground truth's shape (devnet/ledger.ts `CodeTotals`). */
async function totalsOfIndex(sql: postgres.Sql, chainId: number): Promise<Record<string, CodeTotals>> {
  const rows = await sql<Array<{ code: string; kind: 'transaction' | 'userOperation'; success: string; reverted: string; gas: string }>>`
    select code, kind, sum(success_count) as success, sum(reverted_count) as reverted, sum(suffix_gas) as gas
    from code_daily_totals where chain_id = ${chainId} group by code, kind`
  const totals: Record<string, CodeTotals> = {}
  for (const row of rows) {
    const entry = (totals[row.code] ??= { transactions: 0, userOperations: 0, reverted: 0, suffixGas: 0 })
    if (row.kind === 'transaction') entry.transactions += Number(row.success)
    else entry.userOperations += Number(row.success)
    entry.reverted += Number(row.reverted)
    entry.suffixGas += Number(row.gas)
  }
  // a code whose every count went back to zero is not in the index's answers
  for (const [code, entry] of Object.entries(totals)) if (Object.values(entry).every((value) => value === 0)) delete totals[code]
  return totals
}

/** Attributed transactions and operations by kind and outcome, each counted once whatever its number of codes. */
async function unitsOfIndex(sql: postgres.Sql, chainId: number) {
  const rows = await sql<Array<{ kind: 'transaction' | 'userOperation'; status: 'success' | 'reverted'; count: string }>>`
    select kind, status, count(*) from (select distinct tx_hash, user_op_index, kind, status from attributions where chain_id = ${chainId}) units
    group by kind, status`
  const units = { transaction: { success: 0, reverted: 0 }, userOperation: { success: 0, reverted: 0 } }
  for (const row of rows) units[row.kind][row.status] = Number(row.count)
  return units
}

/** Compares the index's per code totals, rows, attributed units and malformed suffixes with the chain's ground truth. */
export async function verifyAgainstTruth(sql: postgres.Sql, truth: ChainTruth): Promise<Verification> {
  const mismatches: string[] = []
  const totals = await totalsOfIndex(sql, truth.chainId)
  for (const code of new Set([...Object.keys(truth.totals), ...Object.keys(totals)])) {
    const want = JSON.stringify(truth.totals[code] ?? null)
    const got = JSON.stringify(totals[code] ?? null)
    if (want !== got) mismatches.push(`${code}: index ${got}, truth ${want}`)
  }
  const units = await unitsOfIndex(sql, truth.chainId)
  const expectedUnits = { transaction: truth.attributedTransactions, userOperation: truth.attributedUserOperations }
  if (JSON.stringify(units) !== JSON.stringify(expectedUnits)) {
    mismatches.push(`attributed units: index ${JSON.stringify(units)}, truth ${JSON.stringify(expectedUnits)}`)
  }
  const [{ count: attributionRows } = { count: '0' }] = await sql<Array<{ count: string }>>`
    select count(*) from attributions where chain_id = ${truth.chainId}`
  if (Number(attributionRows) !== truth.attributionRows) {
    mismatches.push(`attributions rows: ${attributionRows} in the index, ${truth.attributionRows} in the truth`)
  }
  let malformed: number | null = null
  try {
    const [row] = await sql<Array<{ count: string }>>`select count(*) from malformed_suffixes where chain_id = ${truth.chainId}`
    malformed = Number(row?.count ?? 0)
  } catch {
    // table absent: malformed suffixes are not verified
  }
  if (malformed !== null && malformed !== truth.malformed) {
    mismatches.push(`malformed suffixes: ${malformed} in the index, ${truth.malformed} in the truth`)
  }
  return {
    equal: mismatches.length === 0,
    codes: Object.keys(truth.totals).length,
    attributionRows: { index: Number(attributionRows), truth: truth.attributionRows },
    malformed: { index: malformed, truth: truth.malformed },
    mismatches: mismatches.slice(0, 20),
  }
}
