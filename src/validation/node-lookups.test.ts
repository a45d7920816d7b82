import { describe, expect, it } from 'vitest'
import { HashNotFoundError, ValidationBusyError } from './errors.js'
import { createNodeLookups } from './node-lookups.js'

/** A lookup that resolves or rejects when the test says, counting how often the node was asked. */
function controllableNode() {
  const waiting: Array<{ resolve: (value: string) => void; reject: (error: Error) => void }> = []
  let asked = 0
  return {
    lookup: () =>
      new Promise<string>((resolve, reject) => {
        asked++
        waiting.push({ resolve, reject })
      }),
    asked: () => asked,
    answer: (value: string) => waiting.shift()!.resolve(value),
    miss: () => waiting.shift()!.reject(new HashNotFoundError('transaction 0x01 is not known to chain 1')),
  }
}

const admitAll = async () => {}
const settled = () => new Promise((resolve) => setImmediate(resolve))

describe('createNodeLookups', () => {
  it('answers a miss again from memory until missCacheMs passes, without admission or the node', async () => {
    let now = 0
    const lookups = createNodeLookups<string>({ concurrency: 1, missCacheMs: 15_000, now: () => now })
    const node = controllableNode()
    let admitted = 0
    const admit = async () => void admitted++
    const first = lookups.run('k', admit, node.lookup)
    await settled()
    node.miss()
    await expect(first).rejects.toThrow(HashNotFoundError)
    for (let i = 0; i < 5; i++) await expect(lookups.run('k', admit, node.lookup)).rejects.toThrow('is not known to chain 1')
    expect({ asked: node.asked(), admitted }).toEqual({ asked: 1, admitted: 1 })
    now += 15_000
    const later = lookups.run('k', admit, node.lookup)
    await settled()
    node.answer('found now')
    await expect(later).resolves.toBe('found now')
    expect({ asked: node.asked(), admitted }).toEqual({ asked: 2, admitted: 2 })
  })

  it('remembers nothing but misses: a node failure is asked again', async () => {
    const lookups = createNodeLookups<string>({ concurrency: 1, missCacheMs: 15_000 })
    const failing = () => Promise.reject(new Error('node down'))
    await expect(lookups.run('k', admitAll, failing)).rejects.toThrow('node down')
    const node = controllableNode()
    const again = lookups.run('k', admitAll, node.lookup)
    await settled()
    node.answer('ok')
    await expect(again).resolves.toBe('ok')
  })

  it('shares a lookup in flight with every request for the same key', async () => {
    const lookups = createNodeLookups<string>({ concurrency: 4, missCacheMs: 0 })
    const node = controllableNode()
    let admitted = 0
    const admit = async () => void admitted++
    const answers = Array.from({ length: 10 }, () => lookups.run('k', admit, node.lookup))
    await settled()
    node.answer('one answer')
    expect(await Promise.all(answers)).toEqual(Array(10).fill('one answer'))
    expect({ asked: node.asked(), admitted }).toEqual({ asked: 1, admitted: 1 })
  })

  it('asks the node at most `concurrency` at once, lets maxWaiting wait, and refuses the rest', async () => {
    let busy = 0
    const lookups = createNodeLookups<string>({ concurrency: 2, maxWaiting: 3, missCacheMs: 0, onBusy: () => busy++ })
    const node = controllableNode()
    const accepted = Array.from({ length: 5 }, (_, i) => lookups.run(`k${i}`, admitAll, node.lookup))
    await settled()
    expect(node.asked()).toBe(2)
    expect(lookups.waiting()).toBe(3)
    await expect(lookups.run('k5', admitAll, node.lookup)).rejects.toThrow(ValidationBusyError)
    expect(busy).toBe(1)
    for (let i = 0; i < 5; i++) {
      node.answer(`a${i}`)
      await settled()
    }
    expect(await Promise.all(accepted)).toEqual(['a0', 'a1', 'a2', 'a3', 'a4'])
    expect(node.asked()).toBe(5)
  })

  it('does not hand one client’s refusal to another waiting for the same key', async () => {
    const lookups = createNodeLookups<string>({ concurrency: 2, missCacheMs: 0 })
    const node = controllableNode()
    let refuse!: (error: Error) => void
    const overBudget = lookups.run('k', () => new Promise<void>((_, reject) => (refuse = reject)), node.lookup)
    let admittedOther = 0
    const other = lookups.run('k', async () => void admittedOther++, node.lookup)
    await settled()
    refuse(new Error('client A is over its budget'))
    await expect(overBudget).rejects.toThrow('client A')
    await settled()
    node.answer('for B')
    await expect(other).resolves.toBe('for B')
    expect({ asked: node.asked(), admittedOther }).toEqual({ asked: 1, admittedOther: 1 })
  })

  it('asks nothing when admission refuses', async () => {
    const lookups = createNodeLookups<string>({ concurrency: 1, missCacheMs: 0 })
    const node = controllableNode()
    await expect(lookups.run('k', async () => Promise.reject(new Error('over budget')), node.lookup)).rejects.toThrow('over budget')
    expect(node.asked()).toBe(0)
  })
})
