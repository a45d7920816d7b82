import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { fileURLToPath } from 'node:url'
import type postgres from 'postgres'
import { migrateDatabase } from '../../src/db/migrate.js'

/**
 * An upgrade, as a database that indexed before the aggregate tables lived
 * through it: migrated up to the last migration with a hand-written
 * backfill section, attribution rows already stored, the backfills run in
 * order, then the later migrations converting what they built. Used by the
 * upgrade test (test/analytics/upgrade-backfills.test.ts) and by the
 * analytics bench, which builds a million rows' aggregates this way.
 */
const migrationsDir = fileURLToPath(new URL('../../drizzle/', import.meta.url))

const migrationFiles = () =>
  readdirSync(migrationsDir)
    .filter((file) => file.endsWith('.sql'))
    .sort()

/** The hand-written backfill sections at the end of the migrations that have one, in order. */
export function backfillStatements(): string[] {
  return migrationFiles().flatMap((file) => {
    const text = readFileSync(`${migrationsDir}${file}`, 'utf8')
    const start = text.indexOf('-- Backfill')
    if (start < 0) return []
    return text
      .slice(start)
      .split('--> statement-breakpoint')
      .map((statement) => statement.trim())
      .filter(Boolean)
  })
}

/**
 * Migrates `url` through the last migration with a backfill section (a copy
 * of drizzle/ with the later ones left out of its journal): the schema the
 * backfills were written for.
 */
export async function migrateThroughBackfills(url: string): Promise<void> {
  const withBackfill = migrationFiles().filter((file) => readFileSync(`${migrationsDir}${file}`, 'utf8').includes('-- Backfill'))
  const lastTag = withBackfill.at(-1)!.replace(/\.sql$/, '')
  const folder = mkdtempSync(`${tmpdir()}/migrations-`)
  try {
    cpSync(migrationsDir, folder, { recursive: true })
    const journal = JSON.parse(readFileSync(`${folder}/meta/_journal.json`, 'utf8')) as { entries: Array<{ tag: string }> }
    journal.entries = journal.entries.slice(0, journal.entries.findIndex((entry) => entry.tag === lastTag) + 1)
    writeFileSync(`${folder}/meta/_journal.json`, JSON.stringify(journal))
    await migrateDatabase(url, folder)
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }
}

export async function runBackfills(sql: postgres.Sql): Promise<void> {
  for (const statement of backfillStatements()) await sql.unsafe(statement)
}

export const UPGRADE_CHAINS = { base: 8453, devnet: 31337 } as const

/**
 * `rows` attribution rows written straight into the table, as a database
 * indexed before the aggregates existed holds them: one set-based INSERT …
 * SELECT over generate_series, deterministic (md5 of the row number stands
 * in for randomness). Every row is its own transaction or operation; a
 * quarter on the devnet chain, the rest on Base; `codes` codes skewed so a
 * few are busy, 1% invalid, a tenth in a custom registry; `senders` senders;
 * 20% UserOperations, 5% reverted; spread over the last 30 days. With
 * `opSendersSpelledApart`, a UserOperation's sender is stored in capitals,
 * as senders were stored before migration 0019 (checksummed from calldata)
 * while the same wallet's transactions stored it lowercase.
 */
// the columns are spelled out, not taken from store/attribution-columns.ts: these rows are written into the schema
// as it was before the aggregates (and before migration 0016 moved each suffix to attribution_suffixes), not today's
export async function insertAttributionRows(
  sql: postgres.Sql,
  options: { rows: number; codes: number; senders: number; opSendersSpelledApart?: boolean },
): Promise<void> {
  const { rows, codes, senders } = options
  const spelledApart = options.opSendersSpelledApart ?? false
  // h: a deterministic 31-bit hash of the row number; codes are skewed (a few busy, a long tail) like real traffic
  await sql`
    insert into attributions (chain_id, block_number, block_hash, block_timestamp, tx_hash, tx_index, kind, user_op_index, user_op_hash,
      sender, target, code, code_status, code_wallet, codes, schema_id, registry_chain_id, registry_address, suffix, suffix_bytes, suffix_gas, status)
    select
      case when i % 4 = 0 then ${UPGRADE_CHAINS.devnet}::int else ${UPGRADE_CHAINS.base}::int end,
      i / 8, '0x' || md5('b' || (i / 8)) || md5('c' || (i / 8)),
      now() - ((${rows}::int - i)::float8 / ${rows}::int) * interval '30 days',
      '0x' || md5('t' || i) || md5('u' || i), i % 8,
      case when i % 5 = 0 then 'userOperation' else 'transaction' end,
      case when i % 5 = 0 then 0 else -1 end,
      case when i % 5 = 0 then '0x' || md5('o' || i) || md5('p' || i) end,
      '0x' || case when i % 5 = 0 and ${spelledApart}::boolean then upper(substr(md5('s' || (h % ${senders}::int)), 1, 40))
        else substr(md5('s' || (h % ${senders}::int)), 1, 40) end, null,
      case when i % 100 = 0 then 'Bad-Code-' || (h % 7) else 'bc_' || lpad(k::text, 8, '0') end,
      case when i % 100 = 0 then 'invalid' when k % 10 = 1 then 'custom' else 'unregistered' end,
      null, array['bc_' || lpad(k::text, 8, '0')], case when k % 10 = 1 then 1 else 0 end,
      case when k % 10 = 1 and i % 100 <> 0 then ${UPGRADE_CHAINS.base}::bigint end,
      case when k % 10 = 1 and i % 100 <> 0 then '0x00000000000000000000000000000000000000aa' end,
      '0x0b62635f30303030303030310b0080218021802180218021802180218021', 30, 420,
      case when i % 20 = 0 then 'reverted' else 'success' end
    from generate_series(1, ${rows}::int) as i,
      lateral (select ('x' || substr(md5(i::text), 1, 8))::bit(32)::int & 2147483647 as h) hashed,
      lateral (select floor(${codes}::int * power(h::float8 / 2147483648, 3))::int as k) coded`
}
