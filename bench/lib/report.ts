import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { fileURLToPath } from 'node:url'

export const resultsDir = fileURLToPath(new URL('../results/', import.meta.url))

export type Machine = {
  cores: number
  cpu: string
  memoryGiB: number
  node: string
  platform: string
}

export function machineInfo(): Machine {
  return {
    cores: os.availableParallelism(),
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  }
}

export type Target = {
  name: string
  /** The goal as the issue states it, e.g. "≥ 50× faster than ox on every input". */
  goal: string
  /** What was measured, in the goal's unit. */
  actual: string
  met: boolean | null
}

export type BenchResult = {
  bench: string
  status: 'ok' | 'skipped' | 'failed'
  /** Why the bench was skipped or failed. */
  reason?: string
  quick: boolean
  command: string
  startedAt: string
  durationMs: number
  machine: Machine
  /** 1-minute load average when the bench started and ended: other work on a shared machine skews figures. */
  loadAverage: { atStart: number; atEnd: number }
  params: Record<string, unknown>
  figures: Record<string, unknown>
  targets: Target[]
}

export function commandFor(bench: string, quick: boolean): string {
  return `npm run bench -- ${bench}${quick ? ' --quick' : ''}`
}

export function writeResult(result: BenchResult): string {
  mkdirSync(resultsDir, { recursive: true })
  const path = `${resultsDir}${result.bench}.json`
  writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`)
  return path
}

/** A fixed-width table on stdout: the first column left-aligned, the others right-aligned. */
export function printTable(title: string, header: string[], rows: Array<Array<string | number>>): void {
  const cells = [header, ...rows.map((row) => row.map((cell) => String(cell)))]
  const widths = header.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)))
  const line = (row: string[]) =>
    row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ')
  process.stdout.write(`\n${title}\n${line(header)}\n${widths.map((width) => '-'.repeat(width)).join('  ')}\n`)
  for (const row of cells.slice(1)) process.stdout.write(`${line(row)}\n`)
}

export function printTargets(targets: Target[]): void {
  if (targets.length === 0) return
  printTable(
    'targets',
    ['target', 'goal', 'measured', 'result'],
    targets.map((t) => [t.name, t.goal, t.actual, t.met === null ? 'n/a' : t.met ? 'met' : 'MISSED']),
  )
}

/** Formats a number with thousands separators and at most `digits` decimals. */
export function fmt(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return String(value)
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
}

export function ratio(value: number, digits = 2): string {
  return `${fmt(value, digits)}×`
}
