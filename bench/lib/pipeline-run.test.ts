import { describe, expect, it } from 'vitest'
import { nextPollMs } from './pipeline-run.js'

describe('nextPollMs', () => {
  it('waits a quarter of the time the blocks left should take, between 10 and 250 ms', () => {
    // 1,000 of 3,000 blocks in 2 s: 4 s left, polled every 250 ms at most
    expect(nextPollMs(1_000, 3_000, 2_000)).toBe(250)
    // 2,900 of 3,000 in 5.8 s: 200 ms left, polled every 50 ms
    expect(nextPollMs(2_900, 3_000, 5_800)).toBe(50)
    // the last blocks: as often as every 10 ms, so the measured end is within 10 ms of the true one
    expect(nextPollMs(2_999, 3_000, 6_000)).toBe(10)
  })

  it('polls every 100 ms until the first range is done (no pace to go by)', () => {
    expect(nextPollMs(0, 3_000, 500)).toBe(100)
    expect(nextPollMs(-1, 3_000, 500)).toBe(100)
  })
})
