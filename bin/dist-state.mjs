// Whether dist/ (bin/build.mjs's output) holds the code as the sources are now: bin/attribution.mjs
// runs dist/ only then, and the CLI bench builds it first otherwise (it measures the compiled code).
import { readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = join(dirname(fileURLToPath(import.meta.url)), '..')
/** Written last by bin/build.mjs: its time is the build's. */
export const builtStamp = join(root, 'dist', 'BUILT')
/** What the build reads: a change to any of them makes dist/ stale (tests are not compiled). */
const SOURCE_DIRS = ['src', 'devnet', 'drizzle']
const SOURCE_FILES = ['tsconfig.json', 'tsconfig.build.json']

function modifiedAt(path) {
  try {
    return statSync(path).mtimeMs
  } catch {
    return undefined
  }
}

/** The newest change among the sources, or undefined when there are none (an image ships dist/ alone). */
function newestSourceChange() {
  let newest
  const consider = (path) => {
    const time = modifiedAt(path)
    if (time !== undefined && (newest === undefined || time > newest)) newest = time
  }
  for (const dir of SOURCE_DIRS) {
    let entries
    try {
      entries = readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    } catch {
      continue
    }
    for (const entry of entries) {
      if (entry.isFile() && !entry.name.endsWith('.test.ts')) consider(join(entry.parentPath ?? entry.path, entry.name))
    }
  }
  for (const file of SOURCE_FILES) consider(join(root, file))
  return newest
}

/** 'fresh' (run dist/), 'missing' (never built) or 'stale' (a source changed since the build). */
export function distState() {
  const built = modifiedAt(builtStamp)
  if (built === undefined) return 'missing'
  const changed = newestSourceChange()
  return changed !== undefined && changed > built ? 'stale' : 'fresh'
}
