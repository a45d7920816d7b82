/** Middle value (mean of the two middle values for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** Nearest-rank percentile (p in 0..100): a value that was actually observed. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length
}

export type Samples = Record<string, number[]>

/**
 * Times each variant `reps` times after `warmup` untimed rounds, rotating
 * the order every round so that none always runs first (right after a GC,
 * with a cold cache) or last. Each variant returns a checksum that is
 * accumulated so the work cannot be optimised away.
 */
export function timeInterleaved(
  variants: Record<string, () => number>,
  options: { warmup: number; reps: number; onRound?: (round: number, timings: Record<string, number>) => void },
): { samples: Samples; checksums: Record<string, number> } {
  const names = Object.keys(variants)
  const samples: Samples = Object.fromEntries(names.map((name) => [name, []]))
  const checksums: Record<string, number> = Object.fromEntries(names.map((name) => [name, 0]))
  for (let round = 0; round < options.warmup + options.reps; round++) {
    const timings: Record<string, number> = {}
    for (let i = 0; i < names.length; i++) {
      const name = names[(round + i) % names.length]!
      const started = performance.now()
      const checksum = variants[name]!()
      timings[name] = performance.now() - started
      checksums[name] = checksum
    }
    if (round >= options.warmup) for (const name of names) samples[name]!.push(timings[name]!)
    options.onRound?.(round - options.warmup, timings)
  }
  return { samples, checksums }
}
