#!/usr/bin/env node
// The `attribution` command (npm start, npm run migrate, the Docker image): runs the compiled
// JavaScript in dist/ (bin/build.mjs, run by npm ci), which starts in a fraction of the time the
// TypeScript sources take through tsx's loader.
//
// In a working copy whose sources changed since the last build, dist/ would run yesterday's code:
// then the sources run through tsx instead (a dev dependency), so `npm start`, the tests that spawn
// this command and a quick try after an edit always run the code as it is now. `npm run build`
// makes it fast again. An image or install without the sources runs dist/ as it is.
import { readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
/** Written last by bin/build.mjs: its time is the build's. */
const builtStamp = join(root, 'dist', 'BUILT')
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

async function runSourcesThroughTsx(reason) {
  let register
  try {
    ;({ register } = await import('tsx/esm/api'))
  } catch {
    process.stderr.write(`${reason}, and tsx (a dev dependency) is not installed to run the sources: run npm run build\n`)
    process.exit(78)
  }
  // a person at a terminal learns why this start is slow; scripts and tests read unchanged output
  if (process.stderr.isTTY) process.stderr.write(`(${reason}: running the TypeScript sources; npm run build compiles them)\n`)
  register()
  await import(pathToFileURL(join(root, 'src', 'bin', 'cli.ts')).href)
}

const built = modifiedAt(builtStamp)
const sourcesChanged = newestSourceChange()
if (built === undefined) await runSourcesThroughTsx('dist/ is not built')
else if (sourcesChanged !== undefined && sourcesChanged > built) await runSourcesThroughTsx('dist/ is older than the sources')
else await import(pathToFileURL(join(root, 'dist', 'src', 'bin', 'cli.js')).href)
