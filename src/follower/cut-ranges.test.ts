import { zeroHash as ZERO_HASH, type Hex } from 'viem'
import { describe, expect, it, vi } from 'vitest'
import { headersOf, jobsFromHeaders, MAX_NEW_RANGES_PER_TICK, moreToCut, parentHashOf, planRanges, roomFor } from './cut-ranges.js'

const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hex
const header = (n: number) => ({ hash: hash(n) })

describe('roomFor', () => {
  it('is what MAX_PENDING_RANGES leaves, at most MAX_NEW_RANGES_PER_TICK', () => {
    expect(MAX_NEW_RANGES_PER_TICK).toBe(100)
    expect(roomFor(0, 3)).toBe(3)
    expect(roomFor(2, 3)).toBe(1)
    expect(roomFor(3, 3)).toBe(0)
    expect(roomFor(5, 3)).toBe(-2)
    expect(roomFor(0, 1_000)).toBe(100)
    expect(roomFor(950, 1_000)).toBe(50)
  })
})

describe('planRanges', () => {
  it.each([
    ['cuts ranges of rangeSize from next through target, the last one shorter', { next: 10, target: 34, rangeSize: 10, room: 100 }, [[10, 19], [20, 29], [30, 34]]],
    ['ends a range exactly at the target when it fits', { next: 0, target: 19, rangeSize: 10, room: 100 }, [[0, 9], [10, 19]]],
    ['cuts at most room ranges', { next: 0, target: 1_000, rangeSize: 2, room: 3 }, [[0, 1], [2, 3], [4, 5]]],
    ['cuts one block when next is the target', { next: 7, target: 7, rangeSize: 10, room: 1 }, [[7, 7]]],
    ['cuts nothing with the target below next', { next: 8, target: 7, rangeSize: 10, room: 100 }, []],
    ['cuts nothing with no room', { next: 0, target: 100, rangeSize: 10, room: 0 }, []],
    ['cuts nothing with less than no room', { next: 0, target: 100, rangeSize: 10, room: -2 }, []],
  ])('%s', (_, plan, expected) => {
    expect(planRanges(plan)).toEqual(expected.map(([from, to]) => ({ from, to })))
  })
})

describe('jobsFromHeaders', () => {
  const bounds = [
    { from: 10, to: 19 },
    { from: 20, to: 29 },
    { from: 30, to: 34 },
  ]

  it('chains the jobs by hash from the parent hash', () => {
    expect(jobsFromHeaders(bounds, [header(19), header(29), header(34)], hash(9), 5)).toEqual([
      { chainId: 5, fromBlock: 10, toBlock: 19, parentHash: hash(9), toHash: hash(19) },
      { chainId: 5, fromBlock: 20, toBlock: 29, parentHash: hash(19), toHash: hash(29) },
      { chainId: 5, fromBlock: 30, toBlock: 34, parentHash: hash(29), toHash: hash(34) },
    ])
  })

  it('cuts at the first header the node lacks', () => {
    expect(jobsFromHeaders(bounds, [header(19), null, header(34)], hash(9), 5)).toEqual([
      { chainId: 5, fromBlock: 10, toBlock: 19, parentHash: hash(9), toHash: hash(19) },
    ])
    expect(jobsFromHeaders(bounds, [header(19), header(29)], hash(9), 5)).toEqual([
      { chainId: 5, fromBlock: 10, toBlock: 19, parentHash: hash(9), toHash: hash(19) },
      { chainId: 5, fromBlock: 20, toBlock: 29, parentHash: hash(19), toHash: hash(29) },
    ])
    expect(jobsFromHeaders(bounds, [null, header(29), header(34)], hash(9), 5)).toEqual([])
  })

  it('starts at block 0 from the zero hash', () => {
    expect(jobsFromHeaders([{ from: 0, to: 3 }], [header(3)], ZERO_HASH, 1)).toEqual([
      { chainId: 1, fromBlock: 0, toBlock: 3, parentHash: ZERO_HASH, toHash: hash(3) },
    ])
  })

  it('makes no jobs of no bounds', () => {
    expect(jobsFromHeaders([], [], hash(9), 5)).toEqual([])
  })
})

describe('moreToCut', () => {
  const bounds = [
    { from: 10, to: 19 },
    { from: 20, to: 29 },
  ]
  const jobs = jobsFromHeaders(bounds, [header(19), header(29)], hash(9), 5)

  it('is true only when every planned range was cut and the last ends below the target', () => {
    expect(moreToCut(jobs, bounds, 30)).toBe(true)
    expect(moreToCut(jobs, bounds, 29)).toBe(false)
    expect(moreToCut(jobs.slice(0, 1), bounds, 100)).toBe(false)
    expect(moreToCut([], [], 100)).toBe(false)
  })
})

describe('parentHashOf', () => {
  it('is the zero hash for block 0, without asking the node', async () => {
    const rpc = { header: vi.fn() }
    expect(await parentHashOf(rpc, 0)).toBe(ZERO_HASH)
    expect(ZERO_HASH).toBe(`0x${'0'.repeat(64)}`)
    expect(rpc.header).not.toHaveBeenCalled()
  })

  it('is the hash of the block before, or undefined when the node lacks it', async () => {
    const rpc = { header: vi.fn(async (n: number) => (n === 4 ? { number: '0x4', hash: hash(4), parentHash: hash(3), timestamp: '0x0' } : null)) }
    expect(await parentHashOf(rpc as never, 5)).toBe(hash(4))
    expect(rpc.header).toHaveBeenCalledWith(4)
    expect(await parentHashOf(rpc as never, 9)).toBeUndefined()
  })
})

describe('headersOf', () => {
  it('takes the head’s header as read and asks the node only for the others, in order', async () => {
    const asked: number[][] = []
    const rpc = {
      async headers(numbers: readonly number[]) {
        asked.push([...numbers])
        return numbers.map((n) => (n === 7 ? null : { hash: `0x${n}` as `0x${string}` }))
      },
    }
    expect(await headersOf(rpc as never, [10], { number: 10, hash: '0xhead' })).toEqual([{ hash: '0xhead' }])
    expect(asked).toEqual([])
    expect(await headersOf(rpc as never, [5, 7, 10], { number: 10, hash: '0xhead' })).toEqual([{ hash: '0x5' }, null, { hash: '0xhead' }])
    expect(asked).toEqual([[5, 7]])
    expect(await headersOf(rpc as never, [5])).toEqual([{ hash: '0x5' }])
  })
})
