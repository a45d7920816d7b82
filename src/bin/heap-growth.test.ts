import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { boundAfter } from './heap-growth.js'

const module = fileURLToPath(new URL('./heap-growth.ts', import.meta.url))

/**
 * A process with a live set of ~150 MiB whose garbage lives long enough to be
 * promoted (what a backfill's ranges and commits make), growing its heap
 * under `percent`: its peak heap size in MiB.
 */
function peakHeapMiB(percent: number, freeBelowMiB = 64): number {
  const script = `
    import { getHeapStatistics } from 'node:v8'
    const { limitHeapGrowth } = await import(${JSON.stringify(module)})
    limitHeapGrowth(${percent}, ${freeBelowMiB} * 2 ** 20)
    globalThis.live = Array.from({ length: 40 }, () => Array.from({ length: 25_000 }, (_, i) => ({ i, s: 'x' + i })))
    const recent = []
    let peak = 0
    for (let round = 0; round < 200; round++) {
      recent.push(Array.from({ length: 25_000 }, (_, i) => ({ i, s: 'y' + i })))
      if (recent.length > 20) recent.shift()
      // a pause now and then, as a backfill's ranges wait on the node: the collections' observer is told
      if (round % 5 === 0) await new Promise((resolve) => setImmediate(resolve))
      peak = Math.max(peak, getHeapStatistics().total_heap_size)
    }
    process.stdout.write(String(peak / 2 ** 20))`
  return Number(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' }))
}

describe('limitHeapGrowth', () => {
  it('keeps a large heap near its live set where V8 alone lets it double, and leaves a heap under the threshold alone', () => {
    const own = peakHeapMiB(0)
    const limited = peakHeapMiB(50)
    const underThreshold = peakHeapMiB(50, 4096)
    // measured here: 448 MiB, 222 bounded, 420 under the threshold (a live set of ~150 MiB); the assertions leave room for any machine
    expect(limited).toBeLessThan(own * 0.75)
    expect(underThreshold).toBeGreaterThan(limited * 1.3)
  }, 90_000)
})

describe('boundAfter', () => {
  const MiB = 2 ** 20
  it('starts the bound past the mark and holds it until a collection leaves under half of it', () => {
    expect(boundAfter(false, 68 * MiB, 80 * MiB)).toBe(false)
    expect(boundAfter(false, 82 * MiB, 80 * MiB)).toBe(true)
    // a dense backfill's collection under the mark: the bound holds (let go, the next threshold was 4× its live set)
    expect(boundAfter(true, 68 * MiB, 80 * MiB)).toBe(true)
    expect(boundAfter(true, 39 * MiB, 80 * MiB)).toBe(false)
  })
})
