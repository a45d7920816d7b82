import { readdirSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * ARCHITECTURE.md's "may import" table cannot drift: every import between
 * two folders of src/ must be listed in the importing folder's row, and
 * every folder a row lists must be allowed by the rules of
 * `.dependency-cruiser.cjs` (which `npm test` enforces on every file).
 * The table documents the graph as it is; the rules bound what it may become.
 */

const root = fileURLToPath(new URL('..', import.meta.url))

type PathRule = { path?: string; pathNot?: string; circular?: boolean }
type Rule = { name: string; from: PathRule; to: PathRule }
const rules = (createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs')) as { forbidden: Rule[] }).forbidden

/** The rule that forbids `from` importing `to` (both paths from the repository's root), if any. */
function forbiddenBy(from: string, to: string): string | undefined {
  const matches = (side: PathRule, path: string) =>
    (side.path === undefined || new RegExp(side.path).test(path)) && (side.pathNot === undefined || !new RegExp(side.pathNot).test(path))
  return rules.find((rule) => !rule.to.circular && matches(rule.from, from) && matches(rule.to, to))?.name
}

function sourceFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

/** A file's layer: its folder under src/ (`rpc`, `store` …), or the file itself at src/'s top (`logger.ts`), or `devnet`. */
function layerOf(path: string): string {
  const parts = path.split('/')
  return parts[0] === 'src' ? parts[1]! : parts[0]!
}

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g

/** Relative imports of a file (type-only ones too, as dependency-cruiser counts them), resolved to paths from the root. */
function importsOf(path: string): string[] {
  const text = readFileSync(join(root, path), 'utf8')
  return [...text.matchAll(IMPORT)].flatMap((match) => {
    const target = normalize(join(dirname(path), match[1]!.replace(/\.js$/, '.ts')))
    for (const candidate of [target, `${target}.ts`, join(target, 'index.ts')]) {
      try {
        if (statSync(join(root, candidate)).isFile()) return [candidate]
      } catch {
        // not this form
      }
    }
    return []
  })
}

/** The table's rows: each layer named in the first column, with the layers its last column lists (`—` none). */
function documentedLayers(): Map<string, Set<string>> {
  const text = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8')
  const section = text.slice(text.indexOf('## Layers'), text.indexOf('\n## ', text.indexOf('## Layers') + 1))
  const rows = section.split('\n').filter((line) => line.startsWith('| `'))
  const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!.replace(/\/$/, ''))
  const layers = new Map<string, Set<string>>()
  for (const row of rows) {
    const cells = row.split('|').slice(1, -1)
    for (const layer of names(cells[0]!)) layers.set(layer, new Set(names(cells.at(-1)!)))
  }
  return layers
}

describe('ARCHITECTURE.md, layers', () => {
  const files = [...sourceFiles('src')]
  const layers = documentedLayers()

  it('has a row for every folder of src/ and every file at its top', () => {
    const present = new Set(
      readdirSync(join(root, 'src'), { withFileTypes: true })
        .filter((entry) => entry.isDirectory() || (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')))
        .map((entry) => entry.name),
    )
    expect([...present].filter((layer) => !layers.has(layer)).sort()).toEqual([])
    expect([...layers.keys()].filter((layer) => !present.has(layer)).sort()).toEqual([])
  })

  it('lists every import between layers in the importing layer’s row', () => {
    const missing = new Set<string>()
    for (const file of files) {
      for (const target of importsOf(file)) {
        const [from, to] = [layerOf(file), layerOf(target)]
        if (from !== to && !layers.get(from)?.has(to)) missing.add(`${from} → ${to} (${file} imports ${target})`)
      }
    }
    expect([...missing].sort()).toEqual([])
  })

  it('lists only what .dependency-cruiser.cjs allows: some file of each listed layer may be imported by the row’s files', () => {
    const refused: string[] = []
    for (const [from, listed] of layers) {
      const fromFiles = files.filter((file) => layerOf(file) === from)
      for (const to of listed) {
        const toFiles = to === 'devnet' ? sourceFiles('devnet') : files.filter((file) => layerOf(file) === to)
        const allowed = fromFiles.some((a) => toFiles.some((b) => forbiddenBy(a, b) === undefined))
        if (!allowed) refused.push(`${from} → ${to}: ${forbiddenBy(fromFiles[0]!, toFiles[0]!)}`)
      }
    }
    expect(refused).toEqual([])
  })

  it('reads the rules as dependency-cruiser does (a known refusal, a known allowance)', () => {
    expect(forbiddenBy('src/store/commit.ts', 'src/pipeline/worker.ts')).toBe('store-below-its-users')
    expect(forbiddenBy('src/rpc/transport.ts', 'src/store/commit.ts')).toBe('transport-knows-no-domain')
    expect(forbiddenBy('src/pipeline/worker.ts', 'src/store/commit.ts')).toBeUndefined()
  })
})
