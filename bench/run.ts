/**
 * `npm run bench [-- <name>…] [--quick] [--cpu-prof]`
 *
 * Runs the benches (all of them, or those named) one after the other, each in
 * its own Node process so that heap state and memory figures do not leak from
 * one to the next. Each prints its tables and writes bench/results/<name>.json;
 * this harness prints a summary of the targets at the end. A bench that cannot
 * run — its feature missing or broken — or crashes fails the run (exit code 1),
 * so CI notices when a bench rots; nothing is ever reported as "skipped".
 *
 *   --quick     small sizes, one repetition: proves every bench still runs (CI), not how fast things are
 *   --wait-quiet  before each bench, wait (up to 15 min) until the 1-minute load average is under half the
 *               core count: on a shared machine other work skews every figure, ratios included
 *   --cpu-prof  V8 CPU profiles of the bench process and of the indexer/API processes it starts,
 *               in bench/results/profiles/<name>/ (summarise with `node --import tsx bench/profile-top.ts <file>`)
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import os from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type { BenchResult } from './lib/report.js'
import { printTable, resultsDir } from './lib/report.js'

const BENCHES = ['detect', 'backfill', 'live', 'memory', 'http', 'analytics', 'commit', 'cli', 'scaling'] as const
const childScript = fileURLToPath(new URL('./lib/child.ts', import.meta.url))

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    quick: { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    'wait-quiet': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
})

if (values.help) {
  process.stdout.write(`usage: npm run bench [-- <${BENCHES.join('|')}>…] [--quick] [--wait-quiet] [--cpu-prof]\n`)
  process.exit(0)
}
const unknown = positionals.filter((name) => !(BENCHES as readonly string[]).includes(name))
if (unknown.length > 0) {
  process.stderr.write(`unknown bench: ${unknown.join(', ')} (known: ${BENCHES.join(', ')})\n`)
  process.exit(64)
}
const selected = positionals.length > 0 ? BENCHES.filter((name) => positionals.includes(name)) : [...BENCHES]

function runChild(name: string): Promise<number> {
  const nodeArgs: string[] = []
  const env = { ...process.env }
  if (values['cpu-prof']) {
    const dir = `${resultsDir}profiles/${name}`
    mkdirSync(dir, { recursive: true })
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${dir}`)
    env.BENCH_CPU_PROF_DIR = dir
  }
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', childScript, name, ...(values.quick ? ['--quick'] : [])], {
    stdio: 'inherit',
    env,
  })
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))))
}

async function waitForQuiet(): Promise<void> {
  const limit = os.availableParallelism() / 2
  const deadline = Date.now() + 15 * 60_000
  while (os.loadavg()[0]! >= limit && Date.now() < deadline) {
    process.stdout.write(`waiting for a quiet machine: load average ${os.loadavg()[0]!.toFixed(2)} ≥ ${limit}\n`)
    await sleep(15_000)
  }
}

const started = Date.now()
let failed = false
for (const name of selected) {
  if (values['wait-quiet']) await waitForQuiet()
  process.stdout.write(`\n======== bench ${name}${values.quick ? ' (quick)' : ''} (load average ${os.loadavg()[0]!.toFixed(2)}) ========\n`)
  if ((await runChild(name)) !== 0) failed = true
}

const rows: string[][] = []
for (const name of selected) {
  const path = `${resultsDir}${name}.json`
  if (!existsSync(path)) {
    rows.push([name, 'no result', '', ''])
    continue
  }
  const result = JSON.parse(readFileSync(path, 'utf8')) as BenchResult
  const targets =
    result.status === 'ok'
      ? result.targets.map((t) => `${t.name}: ${t.actual} ${t.met === null ? '(skipped)' : t.met ? '(met)' : '(MISSED)'}`).join('; ')
      : (result.reason ?? '').split('\n')[0]!
  rows.push([name, result.status, `${(result.durationMs / 1000).toFixed(0)} s`, targets])
}
printTable(`summary (${((Date.now() - started) / 1000).toFixed(0)} s)`, ['bench', 'status', 'time', 'targets'], rows)
process.exit(failed ? 1 : 0)
