import { describe, expect, it } from 'vitest'
import { createAnswerBuffers } from './answer-buffers.js'

const MiB = 1024 * 1024

describe('answer buffers', () => {
  it('serves a request from the smallest free buffer that holds it', () => {
    const buffers = createAnswerBuffers({ kept: 4 })
    const large = buffers.takeBuffer(3 * MiB)
    const small = buffers.takeBuffer(100 * 1024)
    expect([large.length, small.length]).toEqual([4 * MiB, 128 * 1024])
    buffers.giveBack(large)
    buffers.giveBack(small)
    expect(buffers.takeBuffer(1000)).toBe(small)
    expect(buffers.takeBuffer(1000)).toBe(large)
    expect(buffers.takeBuffer(1000)).not.toBe(small)
  })

  it('keeps at most `kept` free buffers in all, the largest, whatever sizes the answers had', () => {
    const buffers = createAnswerBuffers({ kept: 3 })
    // answers growing through every size, four in flight at a time, as a dense backfill's batches move
    for (let size = 64 * 1024; size <= 16 * MiB; size *= 2) {
      const taken = [1, 2, 3, 4].map(() => buffers.takeBuffer(size))
      for (const buffer of taken) buffers.giveBack(buffer)
    }
    expect(buffers.held).toEqual({ count: 3, bytes: 3 * 16 * MiB })
    // and a small answer then allocates nothing
    const reused = buffers.takeBuffer(10)
    expect(reused.length).toBe(16 * MiB)
    buffers.giveBack(reused)
    buffers.giveBack(reused)
    expect(buffers.held.count).toBe(3)
  })

  it('keeps fewer once told to (the requests in flight went down), the largest, and more again once told', () => {
    const buffers = createAnswerBuffers({ kept: 4 })
    const taken = [1, 2, 4, 8].map((size) => buffers.takeBuffer(size * MiB))
    for (const buffer of taken) buffers.giveBack(buffer)
    buffers.keep(2)
    expect(buffers.held).toEqual({ count: 2, bytes: 12 * MiB })
    buffers.keep(3)
    const again = [1, 2, 3].map(() => buffers.takeBuffer(MiB))
    for (const buffer of again) buffers.giveBack(buffer)
    expect(buffers.held).toEqual({ count: 3, bytes: 13 * MiB })
  })

  it('keeps at most 64 MiB of free buffers, the largest, whatever the count allows', () => {
    const buffers = createAnswerBuffers({ kept: 6 })
    // a dense chain's answers: 32 MiB buffers, six in flight, then a smaller one
    const taken = [16, 24, 24, 24, 24, 24].map((size) => buffers.takeBuffer(size * MiB))
    for (const buffer of taken) buffers.giveBack(buffer)
    expect(buffers.held).toEqual({ count: 2, bytes: 64 * MiB })
    buffers.giveBack(buffers.takeBuffer(4 * MiB))
    expect(buffers.held).toEqual({ count: 2, bytes: 64 * MiB })
  })

  it('does not keep a buffer larger than 32 MiB', () => {
    const buffers = createAnswerBuffers({ kept: 2 })
    buffers.giveBack(buffers.takeBuffer(40 * MiB))
    expect(buffers.held).toEqual({ count: 0, bytes: 0 })
  })
})
