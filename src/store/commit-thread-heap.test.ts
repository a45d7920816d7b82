import { describe, expect, it } from 'vitest'
import { createHeapKeeper } from './commit-thread-heap.js'

describe('the commit thread keeps its heap near what it holds', () => {
  it('collects as a commit ends only once the garbage since the last collection passes the headroom', () => {
    let used = 100
    const collections: number[] = []
    const keeper = createHeapKeeper(50, () => used, () => {
      collections.push(used)
      used = 120
    })
    used = 150
    expect(keeper.committed()).toBe(false)
    used = 151
    expect(keeper.committed()).toBe(true)
    expect(collections).toEqual([151])
    // measured from what the collection kept (120), not from where the heap started
    used = 170
    expect(keeper.committed()).toBe(false)
    used = 171
    expect(keeper.committed()).toBe(true)
  })

  it('reaches the collector of this thread', () => {
    // the real collector, on a headroom of zero: any garbage at all is collected
    const garbage = Array.from({ length: 10_000 }, (_, i) => ({ i }))
    expect(garbage.length).toBe(10_000)
    expect(() => createHeapKeeper(0).committed()).not.toThrow()
  })
})
