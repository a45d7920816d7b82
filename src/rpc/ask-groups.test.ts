import { describe, expect, it } from 'vitest'
import { createAskGroups } from './ask-groups.js'

/** An ask held until the test lets it answer (or fail), recording what it was given. */
function heldAsks() {
  const asks: Array<{ items: readonly number[]; answer: () => void; fail: (error: Error) => void }> = []
  const ask = (items: readonly number[]) =>
    new Promise<number[]>((resolve, reject) => asks.push({ items, answer: () => resolve(items.map((item) => item * 10)), fail: reject }))
  return { asks, ask }
}

const settled = () => new Promise((resolve) => setImmediate(resolve))

describe('ask groups', () => {
  it('asks a caller alone at once, and gathers what arrives meanwhile into one next ask', async () => {
    const { asks, ask } = heldAsks()
    const groups = createAskGroups({ ask, alone: ask })
    const first = groups.ask([1, 2])
    expect(asks.map((a) => a.items)).toEqual([[1, 2]])
    const second = groups.ask([3])
    const third = groups.ask([4, 5])
    await settled()
    // nothing more goes out while the first ask is out
    expect(asks).toHaveLength(1)
    asks[0]!.answer()
    expect(await first).toEqual([10, 20])
    await settled()
    expect(asks.map((a) => a.items)).toEqual([[1, 2], [3, 4, 5]])
    asks[1]!.answer()
    expect(await second).toEqual([30])
    expect(await third).toEqual([40, 50])
  })

  it('asks each caller of a failed group alone, so one caller failure stays its own', async () => {
    const { asks, ask } = heldAsks()
    const groups = createAskGroups({ ask, alone: ask })
    const first = groups.ask([1])
    const second = groups.ask([2])
    const third = groups.ask([3])
    asks[0]!.answer()
    await first
    await settled()
    asks[1]!.fail(new Error('receipt of another block'))
    await settled()
    expect(asks.slice(2).map((a) => a.items)).toEqual([[2], [3]])
    asks[2]!.fail(new Error('receipt 2 of another block'))
    asks[3]!.answer()
    await expect(second).rejects.toThrow('receipt 2 of another block')
    expect(await third).toEqual([30])
  })

  it('gives a caller alone its own error, without asking again', async () => {
    const { asks, ask } = heldAsks()
    const groups = createAskGroups({ ask, alone: ask })
    const only = groups.ask([7])
    asks[0]!.fail(new Error('node down'))
    await expect(only).rejects.toThrow('node down')
    expect(asks).toHaveLength(1)
    // and the next caller is asked at once
    const next = groups.ask([8])
    expect(asks).toHaveLength(2)
    asks[1]!.answer()
    expect(await next).toEqual([80])
  })

  it('answers no calls without asking', async () => {
    const { asks, ask } = heldAsks()
    expect(await createAskGroups({ ask, alone: ask }).ask([])).toEqual([])
    expect(asks).toHaveLength(0)
  })
})
