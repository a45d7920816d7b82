import { createHash } from 'node:crypto'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { Attribution } from 'ox/erc8021'
import { pad, type Hex } from 'viem'
import { decodeAttribution, type Attributed } from '../src/attribution/decode.js'
import type { AttributionRecord } from '../src/attribution/records.js'
import { closeDatabase, createDatabase } from '../src/db/client.js'
import { migrateDatabase } from '../src/db/migrate.js'
import { attributionInsert, suffixInsert } from '../src/store/attribution-columns.js'
import { commitFinalRanges, copyInto } from '../src/store/bulk-commit.js'
import { commitRanges, recordsOf, type AttributionRow, type RangeResult } from '../src/store/commit.js'
import { createRollingWindows } from '../src/store/rolling-windows.js'
import { insertRanges, type RangeJob } from '../src/store/ranges.js'
import { createRandom } from '../devnet/random.js'
import type { Bench } from './lib/bench.js'
import { cpuSecondsOf } from './lib/cpu.js'
import { createBenchDatabase } from './lib/indexer.js'
import { fmt, printTable } from './lib/report.js'
import { median } from './lib/stats.js'

/**
 * The commit stage alone (issue 23.2): dense ranges (200 transactions a
 * block, half attributed, 30% of those through UserOperations, codes from a
 * busy head and a long tail of 5,000, 15% with two codes: ~1.15 rows per
 * attributed transaction) built in memory, then committed with
 * `commitRanges` four ranges a statement, as the commit batcher does while
 * catching up. Measured over the commits only: the CPU of this process
 * (building the statement's parameters, the driver) and of the PostgreSQL
 * backend(s) serving it, per attribution row.
 *
 * The floor, measured in the same round on a database of its own (the two
 * take turns going first): the same rows, as the same array literals, into
 * the same two tables and their indexes, one statement per four ranges, and
 * nothing else (insertRowsAlone). What storing the rows costs at least; the
 * ratio is what the aggregates, ranges and blocks cost on top.
 *
 * `BENCH_COMMIT_RANGES` / `BENCH_COMMIT_BLOCKS` change the size (default 40
 * ranges of 50 blocks, ~230k rows; quick: 8 of 10). For experiments:
 * - `BENCH_COMMIT_WINDOWS=history` builds the rolling windows first, at
 *   today's date: the rows (of October 2025) fall in the all-time windows
 *   only, as in a backfill; `tip` builds them an hour after the rows, which
 *   then fall in every window, as at the head of a chain. Unset, no window
 *   is built and the commits move none.
 * - `BENCH_DB_LOCALE=en_US.UTF-8` creates the database with that locale
 *   (lib/indexer.ts): what the commit costs on a database whose default
 *   collation is not "C".
 * - `BENCH_COMMIT_INDEXES=1` measures instead what each index of the rows
 *   costs: the floor with every index, without each one, and with none.
 * - `BENCH_COMMIT_PARALLEL=3` commits from that many connections at once,
 *   each taking the next four ranges (PostgreSQL CPU is then that of every
 *   backend).
 */

const CHAIN_ID = 8453
const TX_PER_BLOCK = 200
const BATCH = 4
/** Unix seconds of the first block. */
const START = 1_760_000_000
/** Seconds between blocks: 2,000 blocks span three days, history days committed and completed as in a backfill (src/store/history-days.ts). */
const BLOCK_TIME = 130
const PARALLEL = Number(process.env.BENCH_COMMIT_PARALLEL ?? 1)
const WINDOWS_AT = windowsBuiltAt(process.env.BENCH_COMMIT_WINDOWS)
/** The chain's finalized block's time: today's, every day of the rows history; at the head (`tip`) none known, no day history. */
const FINALIZED_AT = process.env.BENCH_COMMIT_WINDOWS === 'tip' ? undefined : Math.floor(Date.now() / 1000)

/** When the rolling windows are built before the commits (BENCH_COMMIT_WINDOWS); undefined: never. */
function windowsBuiltAt(setting: string | undefined): Date | undefined {
  if (setting === undefined || setting === '') return undefined
  if (setting === 'history') return new Date()
  if (setting === 'tip') return new Date((START + 3600) * 1000)
  throw new Error(`BENCH_COMMIT_WINDOWS: history or tip, got ${setting}`)
}

type Dataset = { results: RangeResult[]; rows: number }

/** A 32-byte hash, spread as a chain's are: a key led by it is written at random leaves, as on a real chain (a counter would append). */
const hash = (n: number, salt: number): Hex => `0x${createHash('sha256').update(`${salt}:${n}`).digest('hex')}`
const address = (n: number): Hex => pad(`0x${(n + 1).toString(16)}`, { size: 20 })

export function denseDataset(ranges: number, blocksPerRange: number, seed: number): Dataset {
  const random = createRandom(seed)
  const suffixes = new Map<string, Attributed>()
  const attributedOf = (codes: string[]) => {
    const key = codes.join(',')
    let attributed = suffixes.get(key)
    if (!attributed) {
      attributed = decodeAttribution(Attribution.toDataSuffix({ codes })) as Attributed
      suffixes.set(key, attributed)
    }
    return attributed
  }
  const code = () => (random.chance(0.6) ? `app_${random.int(20)}` : `tail_${random.int(5000)}`)
  const results: RangeResult[] = []
  let rows = 0
  for (let r = 0; r < ranges; r++) {
    const fromBlock = 1 + r * blocksPerRange
    const job: RangeJob = { chainId: CHAIN_ID, fromBlock, toBlock: fromBlock + blocksPerRange - 1, parentHash: hash(fromBlock - 1, 1), toHash: hash(fromBlock + blocksPerRange - 1, 1) }
    const result: RangeResult = { job, finalizedAt: FINALIZED_AT, blocks: [], txCount: blocksPerRange * TX_PER_BLOCK, rows: [], malformed: [] }
    for (let number = fromBlock; number <= job.toBlock; number++) {
      const block = { number, hash: hash(number, 1), parentHash: hash(number - 1, 1), timestamp: START + number * BLOCK_TIME, txCount: TX_PER_BLOCK }
      result.blocks.push(block)
      for (let tx = 0; tx < TX_PER_BLOCK / 2; tx++) {
        const codes = [...new Set(random.chance(0.15) ? [code(), code()] : [code()])]
        const viaOp = random.chance(0.3)
        const record: AttributionRecord = {
          kind: viaOp ? 'userOperation' : 'transaction',
          txHash: hash(number * 1000 + tx, 2),
          txIndex: tx * 2,
          blockNumber: number,
          blockHash: block.hash,
          blockTimestamp: block.timestamp,
          userOpIndex: viaOp ? 0 : -1,
          userOpHash: viaOp ? hash(number * 1000 + tx, 3) : undefined,
          sender: address(random.int(20_000)),
          target: address(50_000),
          status: random.chance(0.05) ? 'reverted' : 'success',
          actualGasCost: viaOp ? 123_456_789n : undefined,
          attribution: attributedOf(codes),
        }
        for (const c of codes) result.rows.push({ record, code: c, resolution: { status: 'unregistered', wallet: null, registry: null } } satisfies AttributionRow)
        rows += codes.length
      }
    }
    results.push(result)
  }
  return { results, rows }
}

/**
 * A full collection before the measured commits: the dataset is built just
 * before them, and without this its garbage is collected (by threads that
 * process.cpuUsage counts) during the commits, whatever the commit path.
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}

async function backendCpu(sql: import('postgres').Sql, database: string): Promise<number> {
  const pids = await sql<Array<{ pid: number }>>`select pid from pg_stat_activity where datname = ${database} and pid <> pg_backend_pid()`
  return pids.reduce((sum, { pid }) => sum + (cpuSecondsOf(pid) ?? 0), 0)
}

/** How a round writes the rows: the tip path's commit, the bulk path's (finalized ranges), or the rows alone by COPY (the floor). */
type Writer = 'commit' | 'bulk' | 'rows alone'
const WRITERS: Writer[] = ['commit', 'bulk', 'rows alone']

/**
 * The floor of the commit stage: the same attribution and suffix rows, four
 * ranges a transaction, by COPY into the same tables and indexes, and
 * nothing else: no range flipped, no block, no aggregate. The least work
 * that stores the rows the reads need, so the aggregates' share is a
 * commit's cost over it.
 */
async function insertRowsAlone(sql: import('postgres').Sql, results: readonly RangeResult[]): Promise<void> {
  const rows = results.map(({ job, rows }) => ({ chainId: job.chainId, sources: rows }))
  const records = results.map(({ job, rows }) => ({ chainId: job.chainId, sources: recordsOf(rows) }))
  await sql.begin(async (tx) => {
    await copyInto(tx, 'attributions', attributionInsert.names, [attributionInsert.copyText(rows)])
    await copyInto(tx, 'attribution_suffixes', suffixInsert.names, [suffixInsert.copyText(records)])
  })
}

type RoundFigures = { daemon: number; postgres: number; seconds: number }

/** One round of one writer on a fresh database: the CPU of this process and of PostgreSQL per attribution row. */
async function measureRound(dataset: Dataset, writer: Writer, withoutIndexes: readonly string[] = [], setup = ''): Promise<RoundFigures> {
  const database = await createBenchDatabase('bench_commit')
  try {
    await migrateDatabase(database.url)
    for (const index of withoutIndexes) await dropIndex(database.sql, index)
    if (setup) await database.sql.unsafe(setup).simple()
    // one connection per committer: their backends are the PostgreSQL side of every commit
    const db = createDatabase({ url: database.url, poolSize: PARALLEL })
    try {
      await insertRanges(db.$client, dataset.results.map((result) => result.job))
      if (WINDOWS_AT) await createRollingWindows(db.$client).ensureCurrent(WINDOWS_AT)
      await db.$client`select 1`
      collectGarbage()
      const pgBefore = await backendCpu(database.sql, database.name)
      const cpuBefore = process.cpuUsage()
      const started = performance.now()
      let next = 0
      const committer = async () => {
        for (let i = next; i < dataset.results.length; i = next) {
          next += BATCH
          const batch = dataset.results.slice(i, i + BATCH)
          if (writer === 'rows alone') {
            await insertRowsAlone(db.$client, batch)
            continue
          }
          const outcomes = writer === 'bulk' ? await commitFinalRanges(db, batch) : await commitRanges(db, batch)
          if (!outcomes.every((outcome) => outcome.committed)) throw new Error('a range did not commit')
        }
      }
      await Promise.all(Array.from({ length: PARALLEL }, committer))
      const seconds = (performance.now() - started) / 1000
      const cpu = process.cpuUsage(cpuBefore)
      const pg = (await backendCpu(database.sql, database.name)) - pgBefore
      const [stored] = await database.sql<Array<{ rows: number }>>`select count(*)::int as rows from attributions`
      if (stored!.rows !== dataset.rows) throw new Error(`${writer}: stored ${stored!.rows} rows, expected ${dataset.rows}`)
      return { daemon: (cpu.user + cpu.system) / dataset.rows, postgres: (pg * 1e6) / dataset.rows, seconds }
    } finally {
      await closeDatabase(db)
    }
  } finally {
    await database.drop()
  }
}

/**
 * The indexes the rows alone are stored with (BENCH_COMMIT_INDEXES=1): what
 * each costs a row, as the floor's PostgreSQL CPU with it minus without it.
 */
const ROW_INDEXES = [
  'attributions_pkey',
  'attributions_block_unique_idx',
  'attributions_code_page_idx',
  'attributions_user_op_hash_idx',
  'attribution_suffixes_block_pk',
  'attribution_suffixes_tx_hash_idx',
]

async function dropIndex(sql: import('postgres').Sql, index: string): Promise<void> {
  const [owner] = await sql<Array<{ table: string; constraint: boolean }>>`
    select i.tablename as table, exists (select 1 from pg_constraint c where c.conname = i.indexname) as constraint
    from pg_indexes i where i.indexname = ${index}`
  if (!owner) throw new Error(`no index ${index}`)
  await sql.unsafe(owner.constraint ? `alter table ${owner.table} drop constraint ${index}` : `drop index ${index}`)
}

async function measureIndexCosts(ranges: number, blocksPerRange: number, rounds: number) {
  type Variant = [name: string, dropped: string[], setup?: string]
  const all: Variant[] = [
    ['every index', []],
    ...ROW_INDEXES.map((index): [string, string[]] => [`without ${index}`, [index]]),
    ['no index', ROW_INDEXES],
    ['user_op_hash by a B-tree (before drizzle/0024)', ['attributions_user_op_hash_idx'], 'create index on attributions (user_op_hash) where user_op_hash is not null'],
    [
      'suffixes keyed by hash (before drizzle/0025)',
      ['attribution_suffixes_block_pk', 'attribution_suffixes_tx_hash_idx'],
      'alter table attribution_suffixes add primary key (chain_id, tx_hash, user_op_index)',
    ],
    ['code page index without included columns', ['attributions_code_page_idx'], 'create index on attributions (code, block_timestamp desc nulls last, id desc nulls last)'],
  ]
  const variants = all.filter(([name]) => !process.env.BENCH_COMMIT_INDEX_ONLY || process.env.BENCH_COMMIT_INDEX_ONLY.split(',').includes(name))
  const perVariant = new Map<string, number[]>(variants.map(([name]) => [name, []]))
  for (let round = 0; round < rounds; round++) {
    const dataset = denseDataset(ranges, blocksPerRange, 23_2 + round)
    for (const [name, dropped, setup] of variants) perVariant.get(name)!.push((await measureRound(dataset, 'rows alone', dropped, setup)).postgres)
  }
  const everyIndex = median(perVariant.get('every index')!)
  printTable('commit: the rows alone by COPY, PostgreSQL µs per row (medians)', ['indexes', 'µs per row', 'this index costs a row'], variants.map(([name]) => {
    const us = median(perVariant.get(name)!)
    const against = us >= everyIndex ? `${(us - everyIndex).toFixed(1)} more than every index` : `${(everyIndex - us).toFixed(1)} less than every index`
    return [name, us.toFixed(1), name.startsWith('without') ? (everyIndex - us).toFixed(1) : name === 'every index' || name === 'no index' ? '' : against]
  }))
  return Object.fromEntries(variants.map(([name]) => [name, median(perVariant.get(name)!)]))
}

export const commit: Bench = async ({ quick }) => {
  if (process.env.BENCH_COMMIT_INDEXES === '1') {
    const ranges = Number(process.env.BENCH_COMMIT_RANGES ?? (quick ? 8 : 40))
    const blocksPerRange = Number(process.env.BENCH_COMMIT_BLOCKS ?? (quick ? 10 : 50))
    const figures = await measureIndexCosts(ranges, blocksPerRange, quick ? 1 : 3)
    return { params: { ranges, blocksPerRange, indexes: true }, figures, targets: [] }
  }
  const ranges = Number(process.env.BENCH_COMMIT_RANGES ?? (quick ? 8 : 40))
  const blocksPerRange = Number(process.env.BENCH_COMMIT_BLOCKS ?? (quick ? 10 : 50))
  const rounds = quick ? 1 : 3
  const perRow: Record<Writer, RoundFigures[]> = { commit: [], bulk: [], 'rows alone': [] }
  for (let round = 0; round < rounds; round++) {
    const dataset = denseDataset(ranges, blocksPerRange, 23_2 + round)
    // the floor and the commit take turns first: the machine drifts between databases more than within one
    const writers = WRITERS.map((_, i) => WRITERS[(i + round) % WRITERS.length]!)
    for (const writer of writers) {
      const figures = await measureRound(dataset, writer)
      perRow[writer].push(figures)
      console.log(
        `commit round ${round + 1}, ${writer}: ${fmt(dataset.rows)} rows in ${figures.seconds.toFixed(2)} s; µs per row: this process ${figures.daemon.toFixed(1)}, PostgreSQL ${figures.postgres.toFixed(1)}`,
      )
    }
  }
  const medians = (writer: Writer) => ({
    daemonUsPerRow: median(perRow[writer].map((r) => r.daemon)),
    postgresUsPerRow: median(perRow[writer].map((r) => r.postgres)),
    secondsPerRound: median(perRow[writer].map((r) => r.seconds)),
  })
  const ratioToFloor = (writer: Writer) => median(perRow[writer].map((r, i) => r.postgres / perRow['rows alone'][i]!.postgres))
  const figures = {
    ...medians('commit'),
    bulk: medians('bulk'),
    rowsAlone: medians('rows alone'),
    postgresRatioToRowsAlone: ratioToFloor('commit'),
    bulkPostgresRatioToRowsAlone: ratioToFloor('bulk'),
  }
  printTable('commit: CPU per attribution row (medians)', ['process', 'tip commit µs per row', 'bulk commit µs per row', 'rows alone by COPY µs per row (floor)', 'tip ratio', 'bulk ratio'], [
    ['this process (statement building, driver)', figures.daemonUsPerRow.toFixed(1), figures.bulk.daemonUsPerRow.toFixed(1), figures.rowsAlone.daemonUsPerRow.toFixed(1), '', ''],
    ['PostgreSQL backend', figures.postgresUsPerRow.toFixed(1), figures.bulk.postgresUsPerRow.toFixed(1), figures.rowsAlone.postgresUsPerRow.toFixed(1), `${figures.postgresRatioToRowsAlone.toFixed(2)}×`, `${figures.bulkPostgresRatioToRowsAlone.toFixed(2)}×`],
  ])
  return { params: { ranges, blocksPerRange, batch: BATCH, rounds, parallel: PARALLEL, windows: process.env.BENCH_COMMIT_WINDOWS ?? 'none', databaseLocale: process.env.BENCH_DB_LOCALE || 'server default' }, figures, targets: [] }
}
