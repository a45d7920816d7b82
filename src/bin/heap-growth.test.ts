import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const module = fileURLToPath(new URL('./heap-growth.ts', import.meta.url))

/**
 * A process with a live set of ~150 MiB whose garbage lives long enough to be
 * promoted (what a backfill's ranges and commits make), growing its heap
 * under `percent`: its peak heap size in MiB.
 */
function peakHeapMiB(percent: number): number {
  const script = `
    import { getHeapStatistics } from 'node:v8'
    const { limitHeapGrowth } = await import(${JSON.stringify(module)})
    limitHeapGrowth(${percent})
    globalThis.live = Array.from({ length: 40 }, () => Array.from({ length: 25_000 }, (_, i) => ({ i, s: 'x' + i })))
    const recent = []
    let peak = 0
    for (let round = 0; round < 200; round++) {
      recent.push(Array.from({ length: 25_000 }, (_, i) => ({ i, s: 'y' + i })))
      if (recent.length > 20) recent.shift()
      if (round % 10 === 0) await new Promise((resolve) => setImmediate(resolve))
      peak = Math.max(peak, getHeapStatistics().total_heap_size)
    }
    process.stdout.write(String(peak / 2 ** 20))`
  return Number(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' }))
}

describe('limitHeapGrowth', () => {
  it('keeps the heap near its live set where V8 alone lets it double', () => {
    const own = peakHeapMiB(0)
    const limited = peakHeapMiB(50)
    // measured here: 436 MiB against 229 (a live set of ~150 MiB); the assertion leaves room for any machine
    expect(limited).toBeLessThan(own * 0.75)
  }, 60_000)
})
