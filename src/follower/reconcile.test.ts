import type { Hex } from 'viem'
import { describe, expect, it } from 'vitest'
import { flaggedRangeBlocks, flaggedRangeVerdict, reorgDepth } from './reconcile.js'
import { checkBranchAt } from './reorg.js'

const hash = (n: number, other = false) => `0x${other ? 'f' : '0'}${n.toString(16).padStart(63, '0')}` as Hex
const range = (fromBlock: number, toBlock: number) => ({ chainId: 1, fromBlock, toBlock, parentHash: hash(fromBlock - 1), toHash: hash(toBlock) })

describe('flaggedRangeBlocks', () => {
  it('asks for the last block and the parent of the first; only the last from block 0', () => {
    expect(flaggedRangeBlocks(range(10, 19))).toEqual([19, 9])
    expect(flaggedRangeBlocks(range(1, 1))).toEqual([1, 0])
    expect(flaggedRangeBlocks(range(0, 9))).toEqual([9])
  })
})

describe('flaggedRangeVerdict', () => {
  it('is lag when the node lacks the last block', () => {
    expect(flaggedRangeVerdict(range(10, 19), [null, { hash: hash(9) }])).toBe('lag')
    expect(flaggedRangeVerdict(range(10, 19), [])).toBe('lag')
  })

  it('is the same branch when both hashes match, in any case', () => {
    expect(flaggedRangeVerdict(range(10, 19), [{ hash: hash(19) }, { hash: hash(9) }])).toBe('same branch')
    const lower = { ...range(10, 19), parentHash: `0x${'ab'.repeat(32)}` as Hex, toHash: `0x${'cd'.repeat(32)}` as Hex }
    expect(flaggedRangeVerdict(lower, [{ hash: `0x${'CD'.repeat(32)}` }, { hash: `0x${'AB'.repeat(32)}` }])).toBe('same branch')
  })

  it('needs only the last block from block 0', () => {
    expect(flaggedRangeVerdict(range(0, 9), [{ hash: hash(9) }])).toBe('same branch')
    expect(flaggedRangeVerdict(range(0, 9), [{ hash: hash(9, true) }])).toBe('reorg')
  })

  it('is a reorg when either hash differs, or the parent block is missing', () => {
    expect(flaggedRangeVerdict(range(10, 19), [{ hash: hash(19, true) }, { hash: hash(9) }])).toBe('reorg')
    expect(flaggedRangeVerdict(range(10, 19), [{ hash: hash(19) }, { hash: hash(9, true) }])).toBe('reorg')
    expect(flaggedRangeVerdict(range(10, 19), [{ hash: hash(19) }, null])).toBe('reorg')
  })
})

describe('reorgDepth', () => {
  it('counts from the planned tip down to the ancestor, or from the boundary with no range left', () => {
    expect(reorgDepth({ tip: 40, boundary: 29, ancestor: 33 })).toBe(7)
    expect(reorgDepth({ tip: undefined, boundary: 29, ancestor: 29 })).toBe(0)
    expect(reorgDepth({ tip: undefined, boundary: -1, ancestor: -1 })).toBe(0)
  })
})

describe('checkBranchAt', () => {
  /** A node whose block n has hash(n), counting the headers asked of it. */
  function node() {
    const asked: number[] = []
    return { asked, rpc: { header: async (n: number) => (asked.push(n), { number: `0x${n.toString(16)}` as Hex, hash: hash(n), parentHash: hash(n - 1), timestamp: '0x0' as Hex }) } }
  }
  const head = { number: 20, hash: hash(20), parentHash: hash(19) }

  it('finds the index\'s tip at the head or its parent in the head header, without asking the node', async () => {
    const { asked, rpc } = node()
    expect(await checkBranchAt(rpc, { number: 19, hash: hash(19) }, head)).toEqual({ kind: 'same' })
    expect(await checkBranchAt(rpc, { number: 20, hash: hash(20) }, head)).toEqual({ kind: 'same' })
    expect(asked).toEqual([])
  })

  it('asks the node before calling a disagreement with the head header a reorg', async () => {
    const { asked, rpc } = node()
    expect(await checkBranchAt(rpc, { number: 19, hash: hash(19, true) }, head)).toEqual({ kind: 'reorg', mismatchAt: 19 })
    // a head header that does not match the blocks the node serves (a lagging node behind a balancer)
    expect(await checkBranchAt(rpc, { number: 19, hash: hash(19) }, { ...head, parentHash: hash(19, true) })).toEqual({ kind: 'same' })
    expect(asked).toEqual([19, 19])
  })

  it('asks the node for a tip further below the head, or without a head header', async () => {
    const { asked, rpc } = node()
    expect(await checkBranchAt(rpc, { number: 15, hash: hash(15) }, head)).toEqual({ kind: 'same' })
    expect(await checkBranchAt(rpc, { number: 18, hash: hash(18) })).toEqual({ kind: 'same' })
    expect(asked).toEqual([15, 18])
  })
})
