import { describe, expect, it } from 'vitest'
import { createBatchLengths } from './batch-length.js'

/**
 * A simulated node with one thread that serves requests in arrival order,
 * a request of n calls taking `costMs(n)` of it, after `latencyMs` each way
 * on the wire; a client asks ranges of `perRange` receipts, each cut into
 * batches of the length the search gives (evenly, as call-many.ts does),
 * with `inFlight` requests out at most. Event-driven on a virtual clock.
 */
function simulate(options: { costMs: (calls: number) => number; latencyMs?: number; perRange?: number; inFlight?: number; requests?: number; most?: number }) {
  const { costMs, latencyMs = 0.1, perRange = 200, inFlight = 4, requests = 4_000, most = 1_000 } = options
  const lengths = createBatchLengths()
  const key = 'eth_getTransactionReceipt'
  let now = 0
  let nodeFreeAt = 0
  let queue = 0
  let sent = 0
  const out: Array<{ doneAt: number; calls: number; tag: number }> = []
  const lengthsSent: number[] = []
  while (sent < requests) {
    while (out.length < inFlight && sent < requests) {
      if (queue === 0) {
        // ranges differ: 0.75–1.25× `perRange` calls each
        queue = Math.round(perRange * (0.75 + 0.5 * Math.abs(Math.sin(sent * 12.9898) % 1)))
        lengths.asked(key, queue)
      }
      const length = lengths.lengthFor(key, most)
      const calls = Math.ceil(queue / Math.ceil(queue / length))
      queue -= calls
      const tag = lengths.sent(key, calls, now)
      const startsAt = Math.max(now + latencyMs, nodeFreeAt)
      nodeFreeAt = startsAt + costMs(calls)
      out.push({ doneAt: nodeFreeAt + latencyMs, calls, tag })
      lengthsSent.push(calls)
      sent++
    }
    out.sort((a, b) => a.doneAt - b.doneAt)
    const next = out.shift()!
    now = next.doneAt
    lengths.answered(key, next.tag, next.calls, now)
  }
  return { final: lengths.read(key)!, lastLengths: lengthsSent.slice(-200) }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

describe('batch length by measured delivery', () => {
  it('settles on short batches on a node whose cost per call grows with the batch length', () => {
    // 1 ms a request, 0.05 ms a call, 0.002 ms per call per call in the batch: cheapest near 22 calls
    const { final, lastLengths } = simulate({ costMs: (n) => 1 + 0.05 * n + 0.002 * n * n })
    expect(final.settled).toBe(true)
    expect(median(lastLengths)).toBeLessThanOrEqual(45)
    expect(median(lastLengths)).toBeGreaterThanOrEqual(8)
  })

  it('keeps long batches on a node whose cost per call is flat', () => {
    const { final, lastLengths } = simulate({ costMs: (n) => 1 + 0.05 * n })
    expect(final.settled).toBe(true)
    expect(median(lastLengths)).toBeGreaterThanOrEqual(150)
  })

  it('keeps long batches on a far node, where the round trip is the cost', () => {
    const { lastLengths } = simulate({ costMs: (n) => 0.01 * n, latencyMs: 25, inFlight: 8 })
    expect(median(lastLengths)).toBeGreaterThanOrEqual(150)
  })

  it('stays within the most allowed (byte budget, caps) and the calls asked at once', () => {
    const lengths = createBatchLengths()
    lengths.asked('m', 30)
    expect(lengths.lengthFor('m', 1_000)).toBe(30)
    expect(lengths.lengthFor('m', 12)).toBe(12)
    expect(lengths.tracks('m')).toBe(true)
    expect(lengths.tracks('other')).toBe(false)
  })

  it('measures the longest batch first, then tries half of it', () => {
    const lengths = createBatchLengths({ minAnswers: 1 })
    lengths.asked('m', 90)
    expect(lengths.lengthFor('m', 1_000)).toBe(90)
    // the base measured: 90 calls in 100 ms
    const base = lengths.sent('m', 90, 0)
    lengths.answered('m', base, 90, 100)
    expect(lengths.lengthFor('m', 1_000)).toBe(45)
  })
})
