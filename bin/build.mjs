#!/usr/bin/env node
// `npm run build` (and npm ci, through `prepare`): compiles the service to dist/, which `npm start`, the
// `attribution` command and the Docker image run. Plain JavaScript starts in a fraction of the time the
// sources take through tsx's loader; tsx stays for the tests and benches.
//
//   dist/src, dist/devnet   tsc's output (tsconfig.build.json), laid out as the sources are
//   dist/drizzle, dist/src/dashboard/public
//                           the files the code finds beside itself (migrations, the dashboard page),
//                           copied so the compiled modules' relative paths land on them
//   dist/BUILT              written last: bin/attribution.mjs runs dist/ only when it is newer than every source
//
// `--prepare` (npm's lifecycle): nothing to do without sources (the Docker image installs its
// dependencies before it copies them), without TypeScript (an install that omitted dev dependencies) or
// when dist/ already holds the sources as they are. npm runs `prepare` not only in npm ci: the first
// `npx attribution` on a machine installs this folder into npx's cache, which runs it too, and a
// rebuild there pulled dist/ from under a daemon starting beside it.
//
// The build goes to a folder of its own and takes dist/'s place by rename, so whatever runs dist/ while
// it builds finds the whole previous build or the whole new one, never half of either.
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { distState, root } from './dist-state.mjs'

const dist = join(root, 'dist')
const building = join(root, `.dist-building-${process.pid}`)
const replaced = join(root, `.dist-replaced-${process.pid}`)
/** Non-TypeScript files the compiled code reads, each at the same place relative to it as in the sources. */
const ASSETS = ['drizzle', 'src/dashboard/public']

function typescriptCompiler() {
  try {
    return createRequire(import.meta.url).resolve('typescript/bin/tsc')
  } catch {
    return undefined
  }
}

const prepare = process.argv.includes('--prepare')
const tsc = typescriptCompiler()
if (prepare && (!existsSync(join(root, 'src')) || !tsc || distState() === 'fresh')) process.exit(0)
if (!tsc) {
  process.stderr.write('TypeScript is not installed (a dev dependency): run npm ci without --omit=dev, then npm run build\n')
  process.exit(1)
}

// from scratch: a module whose source was deleted must not linger in dist/
const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', building], { stdio: 'inherit' })
if (compiled.status !== 0) {
  rmSync(building, { recursive: true, force: true })
  process.exit(compiled.status ?? 1)
}
for (const asset of ASSETS) cpSync(join(root, asset), join(building, asset), { recursive: true })
writeFileSync(join(building, 'BUILT'), `${new Date().toISOString()}\n`)
if (existsSync(dist)) renameSync(dist, replaced)
renameSync(building, dist)
rmSync(replaced, { recursive: true, force: true })
