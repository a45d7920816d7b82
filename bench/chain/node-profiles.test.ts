import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  createNodeProfile,
  defaultGrowingOptions,
  defaultSerialOptions,
  growingWorkMs,
  profileSpec,
  serialCapacity,
  serialWorkMs,
  type GrowingOptions,
  type SerialOptions,
} from './node-profiles.js'

const MiB = 2 ** 20
const BLOCK = 0.35 * MiB

beforeEach(() => vi.useFakeTimers())
afterEach(() => vi.useRealTimers())

/** Blocks per ms a serial node delivers with `held` requests of `batch` blocks always in flight (its thread never idle). */
function nodeBound(options: SerialOptions, batch: number, held: number): number {
  const work = serialWorkMs(options, { callBytes: Array(batch).fill(BLOCK), answerBytes: batch * BLOCK })
  return (batch * serialCapacity(options, held)) / work
}

describe('serial node', () => {
  it('costs a request its fixed part, each call, each MiB, and the square of the answer', () => {
    const options: SerialOptions = { requestMs: 2, callMs: 0.5, msPerMiB: 3, quadraticMsPerMiB2: 0.25, contention: 0 }
    expect(serialWorkMs(options, { callBytes: [MiB, MiB], answerBytes: 2 * MiB })).toBe(2 + 2 * (0.5 + 3) + 0.25 * 4)
  })

  it('on the calibrated defaults, is best at batch 10: neither the smallest nor the largest batch', () => {
    const batches = [5, 10, 20, 50]
    for (const held of [2, 4, 8, 16]) {
      const best = batches.reduce((a, b) => (nodeBound(defaultSerialOptions, b, held) > nodeBound(defaultSerialOptions, a, held) ? b : a))
      expect(best, `${held} in flight`).toBe(10)
    }
    // where a transport that only grows ends up (44 × 8) delivers about half the plain client's best point, as users saw
    const grown = nodeBound(defaultSerialOptions, 44, 8) / nodeBound(defaultSerialOptions, 10, 4)
    expect(grown).toBeGreaterThan(0.45)
    expect(grown).toBeLessThan(0.6)
  })

  it('answers one request alone after its work, and two together share the thread with contention', () => {
    const options: SerialOptions = { requestMs: 10, callMs: 0, msPerMiB: 0, quadraticMsPerMiB2: 0, contention: 0.5 }
    const node = createNodeProfile({ name: 'serial', options }, () => Date.now())
    const sent: string[] = []
    node.answer({ callBytes: [], answerBytes: 0 }, () => sent.push('alone'))
    vi.advanceTimersByTime(9)
    expect(sent).toEqual([])
    vi.advanceTimersByTime(1)
    expect(sent).toEqual(['alone'])

    // two held: each gets 1/1.5 of the thread, halved: a third of a ms of work per ms
    node.answer({ callBytes: [], answerBytes: 0 }, () => sent.push('a'))
    node.answer({ callBytes: [], answerBytes: 0 }, () => sent.push('b'))
    vi.advanceTimersByTime(29)
    expect(sent).toEqual(['alone'])
    vi.advanceTimersByTime(1)
    expect(sent.slice(1).sort()).toEqual(['a', 'b'])
    expect(node.stats()).toEqual({ modelledBusyMs: 40, refused: 0, maxInFlight: 2 })
  })

  it('lets a late request catch up: the thread serves whoever is held, by real elapsed time', () => {
    const options: SerialOptions = { requestMs: 10, callMs: 0, msPerMiB: 0, quadraticMsPerMiB2: 0, contention: 0 }
    const node = createNodeProfile({ name: 'serial', options }, () => Date.now())
    const sentAt: Record<string, number> = {}
    const started = Date.now()
    node.answer({ callBytes: [], answerBytes: 0 }, () => (sentAt.first = Date.now() - started))
    vi.advanceTimersByTime(4)
    node.answer({ callBytes: [], answerBytes: 0 }, () => (sentAt.second = Date.now() - started))
    vi.advanceTimersByTime(100)
    // first: 4 ms alone, then 6 ms of work at half speed; second: 6 ms at half speed, then 4 alone
    expect(sentAt).toEqual({ first: 16, second: 20 })
  })
})

describe('remote node', () => {
  it('answers late, and refuses with 429 past its cap on requests in flight', () => {
    const node = createNodeProfile({ name: 'remote', options: { latencyMs: 50, maxInFlight: 2, retryAfterSeconds: 3 } })
    const sent: string[] = []
    expect(node.admit()).toBeUndefined()
    node.answer({ callBytes: [], answerBytes: 0 }, () => sent.push('a'))
    expect(node.admit()).toBeUndefined()
    node.answer({ callBytes: [], answerBytes: 0 }, () => sent.push('b'))
    expect(node.admit()).toEqual({ status: 429, retryAfterSeconds: 3 })
    node.refuse(() => sent.push('refused'))
    vi.advanceTimersByTime(49)
    expect(sent).toEqual([])
    vi.advanceTimersByTime(1)
    expect(sent).toEqual(['a', 'b', 'refused'])
    // the two held are answered: room again
    expect(node.admit()).toBeUndefined()
    expect(node.stats()).toMatchObject({ refused: 1, maxInFlight: 2 })
  })
})

describe('fast node', () => {
  it('answers at once and refuses nothing', () => {
    const node = createNodeProfile({ name: 'fast' })
    const sent: string[] = []
    expect(node.admit()).toBeUndefined()
    node.answer({ callBytes: [BLOCK], answerBytes: BLOCK }, () => sent.push('now'))
    expect(sent).toEqual(['now'])
  })
})

describe('growing node', () => {
  const RECEIPT = 1_500
  const perCall = (calls: number, bytes: number) => growingWorkMs(defaultGrowingOptions, { callBytes: Array(calls).fill(bytes), answerBytes: calls * bytes }) / calls

  it('costs a request its fixed part, and each call its own part plus a part per call of its batch', () => {
    const options: GrowingOptions = { requestMs: 1, callMs: 0.5, perCallPerCallMs: 0.25, msPerMiB: 2, contention: 0 }
    expect(growingWorkMs(options, { callBytes: [MiB, MiB], answerBytes: 2 * MiB })).toBe(1 + 2 * (0.5 + 0.25 * 2 + 2))
  })

  it('on its defaults, light receipts cost several times more per call in one batch of 200 than 20 at a time, whatever their bytes', () => {
    expect(perCall(200, RECEIPT) / perCall(20, RECEIPT)).toBeGreaterThan(2.5)
    // the cheapest length is short for receipts and blocks alike
    const best = (bytes: number) => [5, 10, 20, 30, 50, 100, 200].reduce((a, b) => (perCall(b, bytes) < perCall(a, bytes) ? b : a))
    expect(best(RECEIPT)).toBe(20)
    expect(best(BLOCK)).toBeLessThanOrEqual(30)
  })

  it('is one thread shared by the requests in flight, as the serial node', () => {
    const node = createNodeProfile(profileSpec('growing', { requestMs: 10, callMs: 0, perCallPerCallMs: 0, msPerMiB: 0, contention: 0 }), () => Date.now())
    const done: string[] = []
    node.answer({ callBytes: [], answerBytes: 0 }, () => done.push('a'))
    node.answer({ callBytes: [], answerBytes: 0 }, () => done.push('b'))
    vi.advanceTimersByTime(19)
    expect(done).toEqual([])
    vi.advanceTimersByTime(1)
    expect(done.sort()).toEqual(['a', 'b'])
  })
})
