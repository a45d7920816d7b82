import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * patches/postgres+3.4.9.patch fixes postgres.js losing a pooled connection
 * (and hanging every later query) when Postgres goes away mid-write, and a
 * COPY that fails after its data was sent leaving its writer waiting for
 * ever (store/bulk-commit.ts). It is
 * applied by `patch-package` in npm's postinstall, which `npm ci
 * --ignore-scripts` skips silently: the service would then run, and hang at
 * the first outage. Each patched file carries a line only the patch adds.
 */
const PATCH_MARKERS: Record<string, string> = {
  'connection.js': 'the connection closed before this buffered write ran',
  'index.js': 'a reserve that failed (its connection could not be made)',
}

/** The folder of the postgres.js sources this process imports (its ESM entry's folder). */
function installedDriverFolder(): string {
  const entry = fileURLToPath(import.meta.resolve('postgres'))
  return entry.slice(0, entry.lastIndexOf('/') + 1)
}

/** Undefined when the driver is patched, else the one line that says what to run. */
export function postgresPatchProblem(folder = installedDriverFolder()): string | undefined {
  for (const [file, marker] of Object.entries(PATCH_MARKERS)) {
    let text: string
    try {
      text = readFileSync(folder + file, 'utf8')
    } catch {
      return `postgres.js not found at ${folder}: run npm ci`
    }
    if (!text.includes(marker)) {
      return `postgres.js is not patched (${folder}${file}; patches/postgres+3.4.9.patch): run npx patch-package (npm ci --ignore-scripts skips it)`
    }
  }
  return undefined
}
