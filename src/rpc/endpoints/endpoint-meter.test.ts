import { describe, expect, it } from 'vitest'
import { createEndpointMeter } from './endpoint-meter.js'

/** A meter on a clock the test moves. */
function meterOnClock() {
  let clock = 0
  const meter = createEndpointMeter(() => clock)
  return {
    meter,
    /** One work of `items` that took `ms`, then `idleMs` with nothing outstanding. */
    work(items: number, ms: number, idleMs: number) {
      meter.started()
      clock += ms
      meter.finished({ items, bytes: items * 1_000 })
      clock += idleMs
    },
  }
}

describe('endpoint meter', () => {
  it('measures items per busy second under load, window by window', () => {
    const { meter, work } = meterOnClock()
    // 50 items in 100 ms, back to back, for 3 s: 500 items per busy second
    for (let i = 0; i < 30; i++) work(50, 100, 0)
    expect(meter.read().itemsPerSecond).toBeCloseTo(500, 6)
    expect(meter.read().bytesPerSecond).toBeCloseTo(500_000, 6)
  })

  it('measures a light load too: one block a second fetched in 5 ms shows once 50 ms of work have gathered', () => {
    const { meter, work } = meterOnClock()
    for (let i = 0; i < 9; i++) work(1, 5, 995)
    // 45 ms of work in 9 s: too little to say anything yet
    expect(meter.read().itemsPerSecond).toBeUndefined()
    for (let i = 0; i < 3; i++) work(1, 5, 995)
    // 12 blocks in 60 ms of work: 200 a busy second
    expect(meter.read().itemsPerSecond).toBeCloseTo(200, 6)
    expect(meter.read().items).toBe(12)
  })
})
