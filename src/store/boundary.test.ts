import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { getTableName, is } from 'drizzle-orm'
import { PgTable } from 'drizzle-orm/pg-core'
import { describe, expect, it } from 'vitest'
import * as indexerSchema from '../db/schema/indexer.js'

/**
 * The import rule `npm test` keeps (issue 22): nothing outside store/ (and
 * db/, which defines them) names the indexer's tables or their columns. Other
 * stages ask store/ for what they need, so a column changes in one place.
 * Checked on the source text: no import of an indexer table from db/schema,
 * and no SQL (tagged templates) reading or writing an indexer table by name.
 */
const srcDir = fileURLToPath(new URL('../', import.meta.url))

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

const tables = Object.entries(indexerSchema).filter(([, value]) => is(value, PgTable)) as Array<[string, PgTable]>
const outsideStore = sourceFiles(srcDir)
  .map((path) => relative(srcDir, path))
  .filter((path) => !path.startsWith('store/') && !path.startsWith('db/'))

describe('nothing outside store/ names an indexer table or column', () => {
  it('finds the tables to check', () => {
    expect(tables.map(([name]) => name)).toEqual(expect.arrayContaining(['attributions', 'attributionSuffixes', 'ranges', 'codeDailyTotals']))
    expect(outsideStore.length).toBeGreaterThan(50)
  })

  it('no import of an indexer table from db/schema', () => {
    const offenders: string[] = []
    for (const file of outsideStore) {
      const text = readFileSync(join(srcDir, file), 'utf8')
      for (const match of text.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'[./]*db\/schema\/(?:index|indexer)\.js'/g)) {
        const names = match[1]!.split(',').map((name) => name.trim().replace(/^type\s+/, '').split(/\s+as\s+/)[0]!)
        for (const name of names) if (tables.some(([table]) => table === name)) offenders.push(`${file}: ${name}`)
      }
    }
    expect(offenders).toEqual([])
  })

  it('no SQL reading or writing an indexer table', () => {
    const names = tables.map(([, table]) => getTableName(table))
    const sqlOnTable = new RegExp(`\\b(?:from|join|into|update|delete from)\\s+"?(${names.join('|')})\\b`, 'i')
    // the SQL is what tagged templates (`sql\`…\``, `$client\`…\``) and `unsafe(…)` hold; prose may name a table
    const sqlTexts = (text: string) => [...text.matchAll(/(?:sql|\$client|unsafe\()\s*`([^`]*)`/g)].map((match) => match[1]!)
    const offenders = outsideStore.filter((file) => sqlTexts(readFileSync(join(srcDir, file), 'utf8')).some((text) => sqlOnTable.test(text)))
    expect(offenders).toEqual([])
  })
})
