/**
 * Runs one bench in this process: `node --import tsx bench/lib/child.ts <name> [--quick]`.
 * The harness (bench/run.ts) starts one such process per bench so that each
 * starts with a fresh heap and its memory figures are its own.
 */
import { runBench, type Bench } from './bench.js'

const [name, ...flags] = process.argv.slice(2)
if (!name) {
  process.stderr.write('usage: child.ts <bench> [--quick]\n')
  process.exit(64)
}
const module = (await import(`../${name}.bench.ts`)) as Record<string, Bench>
const bench = module[name]
if (typeof bench !== 'function') throw new Error(`bench/${name}.bench.ts does not export ${name}`)
process.exitCode = await runBench(name, bench, {
  quick: flags.includes('--quick'),
  cpuProfileDir: process.env.BENCH_CPU_PROF_DIR || undefined,
})
