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
// `--prepare` (npm ci's lifecycle): nothing to do without sources (the Docker image installs its
// dependencies before it copies them) or without TypeScript (an install that omitted dev dependencies).
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const dist = join(root, 'dist')
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
if (prepare && (!existsSync(join(root, 'src')) || !tsc)) process.exit(0)
if (!tsc) {
  process.stderr.write('TypeScript is not installed (a dev dependency): run npm ci without --omit=dev, then npm run build\n')
  process.exit(1)
}

// from scratch: a module whose source was deleted must not linger in dist/
rmSync(dist, { recursive: true, force: true })
const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' })
if (compiled.status !== 0) {
  rmSync(dist, { recursive: true, force: true })
  process.exit(compiled.status ?? 1)
}
for (const asset of ASSETS) cpSync(join(root, asset), join(dist, asset), { recursive: true })
writeFileSync(join(dist, 'BUILT'), `${new Date().toISOString()}\n`)
