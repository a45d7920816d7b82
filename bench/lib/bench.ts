import os from 'node:os'
import { commandFor, machineInfo, printTargets, writeResult, type BenchResult, type Target } from './report.js'

export type BenchOptions = {
  /** Small sizes and few repetitions: proves the bench still runs (CI), not how fast things are. */
  quick: boolean
  /** Directory for `--cpu-prof` profiles of processes the bench starts, when profiling was asked for. */
  cpuProfileDir: string | undefined
}

export type BenchOutcome =
  | { params: Record<string, unknown>; figures: Record<string, unknown>; targets: Target[] }
  | { skipped: string; params?: Record<string, unknown> }

export type Bench = (options: BenchOptions) => Promise<BenchOutcome>

/** Thrown by a bench when a feature it measures is missing or broken: the bench fails (it is never reported as skipped). */
export class FeatureMissing extends Error {
  override name = 'FeatureMissing'
}

/**
 * Runs one bench and records its outcome in bench/results/<name>.json:
 * figures and targets when it ran, the reason when it was skipped, the
 * error when it failed. Resolves to the process exit code.
 */
export async function runBench(name: string, bench: Bench, options: BenchOptions): Promise<number> {
  const startedAt = new Date()
  const base = {
    bench: name,
    quick: options.quick,
    command: commandFor(name, options.quick),
    startedAt: startedAt.toISOString(),
    machine: machineInfo(),
    // the end value is filled in once the bench is over
    loadAverage: { atStart: os.loadavg()[0]!, atEnd: Number.NaN },
  }
  let result: BenchResult
  try {
    const outcome = await bench(options)
    const durationMs = Date.now() - startedAt.getTime()
    if ('skipped' in outcome) {
      result = { ...base, status: 'failed', reason: `cannot run: ${outcome.skipped}`, durationMs, params: outcome.params ?? {}, figures: {}, targets: [] }
      process.stderr.write(`\n${name}: FAILED: cannot run: ${outcome.skipped}\n`)
    } else {
      result = { ...base, status: 'ok', durationMs, ...outcome }
      printTargets(outcome.targets)
    }
  } catch (error) {
    const durationMs = Date.now() - startedAt.getTime()
    const reason = error instanceof FeatureMissing ? `cannot run: ${error.message}` : error instanceof Error ? (error.stack ?? error.message) : String(error)
    result = { ...base, status: 'failed', reason, durationMs, params: {}, figures: {}, targets: [] }
    process.stderr.write(`\n${name}: FAILED: ${reason}\n`)
  }
  result.loadAverage.atEnd = os.loadavg()[0]!
  const path = writeResult(result)
  process.stdout.write(`${name}: ${result.status} in ${(result.durationMs / 1000).toFixed(1)} s, results in ${path}\n`)
  return result.status === 'failed' ? 1 : 0
}
