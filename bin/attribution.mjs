#!/usr/bin/env node
// The `attribution` command (npm start, npm run migrate, the Docker image): runs the compiled
// JavaScript in dist/ (bin/build.mjs, run by npm ci), which starts in a fraction of the time the
// TypeScript sources take through tsx's loader.
//
// In a working copy whose sources changed since the last build, dist/ would run yesterday's code:
// then the sources run through tsx instead (a dev dependency), so `npm start`, the tests that spawn
// this command and a quick try after an edit always run the code as it is now. `npm run build`
// makes it fast again. An image or install without the sources runs dist/ as it is.
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { distState, root } from './dist-state.mjs'

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

const state = distState()
if (state === 'fresh') await import(pathToFileURL(join(root, 'dist', 'src', 'bin', 'cli.js')).href)
else await runSourcesThroughTsx(state === 'missing' ? 'dist/ is not built' : 'dist/ is older than the sources')
