import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { faultScale, faultSeed } from './scale.js'

/** Where each fault writes its results, one JSON file per fault, for FAULTS.md and the end-of-run summary. */
export const resultsDir = fileURLToPath(new URL('../../../test-output/faults/results/', import.meta.url))

export type TrialRecord = {
  trial: number
  /** Attribution rows (or counted units) missing against ground truth. */
  lost: number
  /** Rows or counts beyond ground truth: double counting. */
  doubled: number
  /** HTTP answers with a 5xx status that the contract does not allow. */
  fiveXX?: number
  /** Requests, inputs or checks this trial made, where it made many. */
  inputs?: number
  ok: boolean
  durationMs: number
  /** What this trial did (kill moment, reorg shape …) and anything worth reading later. */
  details?: Record<string, unknown>
}

export type FaultResult = {
  fault: string
  title: string
  checked: string
  scale: string
  seed: number
  command: string
  trials: number
  inputs: number
  failed: number
  lost: number
  doubled: number
  fiveXX: number
  durationMs: number
  records: TrialRecord[]
}

/**
 * Collects the trials of one fault and keeps its results file current after
 * every trial, so a run that fails half-way still shows what it did.
 */
export function createFaultReport(options: { fault: string; title: string; checked: string; testFile: string; testName?: string }) {
  const records: TrialRecord[] = []
  const filter = options.testName ? ` -t ${JSON.stringify(options.testName)}` : ''
  const command = `FAULTS_SCALE=${faultScale} FAULTS_SEED=${faultSeed} npx vitest run --config vitest.faults.config.ts ${options.testFile}${filter}`

  function result(): FaultResult {
    return {
      fault: options.fault,
      title: options.title,
      checked: options.checked,
      scale: faultScale,
      seed: faultSeed,
      command,
      trials: records.length,
      inputs: records.reduce((sum, record) => sum + (record.inputs ?? 0), 0),
      failed: records.filter((record) => !record.ok).length,
      lost: records.reduce((sum, record) => sum + record.lost, 0),
      doubled: records.reduce((sum, record) => sum + record.doubled, 0),
      fiveXX: records.reduce((sum, record) => sum + (record.fiveXX ?? 0), 0),
      durationMs: records.reduce((sum, record) => sum + record.durationMs, 0),
      records,
    }
  }

  function write() {
    mkdirSync(resultsDir, { recursive: true })
    writeFileSync(join(resultsDir, `${options.fault}.json`), `${JSON.stringify(result(), null, 2)}\n`)
  }

  return {
    record(trial: TrialRecord) {
      records.push(trial)
      write()
    },
    result,
    write,
  }
}

export type FaultReport = ReturnType<typeof createFaultReport>

function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000)
  return seconds >= 60 ? `${Math.floor(seconds / 60)} min ${seconds % 60} s` : `${seconds} s`
}

/** One Markdown table of every fault's results in the results directory. */
export function summarizeResults(): string {
  let files: string[] = []
  try {
    files = readdirSync(resultsDir).filter((name) => name.endsWith('.json')).sort()
  } catch {
    return 'no fault results recorded'
  }
  const rows = files.map((name) => JSON.parse(readFileSync(join(resultsDir, name), 'utf8')) as FaultResult)
  const lines = [
    '| Fault | Trials | Inputs | Failed | Lost | Doubled | 5xx | Open findings | Duration | Scale, seed |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...rows.map(
      (row) =>
        `| ${row.title} | ${row.trials} | ${row.inputs ? row.inputs.toLocaleString('en') : ''} | ${row.failed} | ${row.lost} | ${row.doubled} | ${row.fiveXX} | ${row.records.filter((record) => record.details?.openFinding).length} | ${formatDuration(row.durationMs)} | ${row.scale}, ${row.seed} |`,
    ),
  ]
  return lines.join('\n')
}
