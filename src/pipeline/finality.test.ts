import { describe, expect, it } from 'vitest'
import { createFinality } from './finality.js'

/** A node answering `finalized` (or refusing it), `latest` and a block by number (block n at time 1000 + 2n), counting the calls. */
function node({ head, finalized }: { head: number; finalized: number | 'unknown tag' | 'down' }) {
  const state = { head, finalized, calls: 0 }
  const hex = (n: number) => `0x${n.toString(16)}`
  return {
    state,
    rpc: {
      async request<T>(method: string, params: unknown[] = []): Promise<T> {
        state.calls++
        expect(method).toBe('eth_getBlockByNumber')
        if (params[0] !== 'finalized') {
          const number = Number.parseInt(params[0] as string, 16)
          return { number: hex(number), timestamp: hex(1000 + 2 * number) } as T
        }
        if (state.finalized === 'down') throw Object.assign(new Error('connect ECONNREFUSED'), { kind: 'network' })
        if (state.finalized === 'unknown tag') throw Object.assign(new Error('invalid block tag'), { kind: 'item_error' })
        return { number: hex(state.finalized), timestamp: hex(1000 + 2 * state.finalized) } as T
      },
      async latestHeader() {
        state.calls++
        return { number: hex(state.head) as `0x${string}`, hash: '0x' as const, parentHash: '0x' as const, timestamp: '0x0' as const }
      },
    },
  }
}

describe('finality boundary', () => {
  it('is the node’s finalized block where it answers one', async () => {
    const { rpc } = node({ head: 1000, finalized: 900 })
    const finality = createFinality({ rpc, depth: 64 })
    expect(await finality.isFinal(900)).toBe(true)
    expect(await finality.isFinal(901)).toBe(false)
    expect(finality.boundary()).toBe(900)
    expect(finality.boundaryTime()).toBe(2800)
  })

  it('is the head less FINALITY_DEPTH on a node without the tag, and asks the tag no more', async () => {
    const { rpc, state } = node({ head: 1000, finalized: 'unknown tag' })
    let clock = 0
    const finality = createFinality({ rpc, depth: 64, refreshMs: 10, now: () => clock })
    expect(await finality.isFinal(936)).toBe(true)
    expect(await finality.isFinal(937)).toBe(false)
    // its time is that block's, asked for (the head's is later)
    expect(finality.boundaryTime()).toBe(1000 + 2 * 936)
    state.head = 1100
    clock = 20
    const before = state.calls
    expect(await finality.isFinal(1036)).toBe(true)
    expect(state.calls - before).toBe(2) // the head, and the header of the block `depth` below it
    expect(finality.boundaryTime()).toBe(1000 + 2 * 1036)
  })

  it('asks again only past the boundary and after refreshMs, and never moves down', async () => {
    const { rpc, state } = node({ head: 1000, finalized: 900 })
    let clock = 0
    const finality = createFinality({ rpc, depth: 64, refreshMs: 100, now: () => clock })
    await finality.isFinal(10)
    const asked = state.calls
    expect(await finality.isFinal(899)).toBe(true)
    expect(await finality.isFinal(950)).toBe(false)
    expect(state.calls).toBe(asked) // within refreshMs: the boundary known answers
    state.finalized = 800 // another endpoint, behind
    clock = 200
    expect(await finality.isFinal(950)).toBe(false)
    expect(finality.boundary()).toBe(900)
    state.finalized = 960
    clock = 400
    expect(await finality.isFinal(950)).toBe(true)
  })

  it('a node that cannot be reached leaves the boundary where it was: such ranges take the tip path', async () => {
    const { rpc, state } = node({ head: 1000, finalized: 900 })
    let clock = 0
    const finality = createFinality({ rpc, depth: 64, refreshMs: 10, now: () => clock })
    expect(await finality.isFinal(900)).toBe(true)
    state.finalized = 'down'
    clock = 20
    expect(await finality.isFinal(950)).toBe(false)
    expect(finality.boundary()).toBe(900)
    state.finalized = 990
    clock = 40
    expect(await finality.isFinal(950)).toBe(true) // still asks the tag: a fault of the moment is not "no tag"
  })

  it('ranges asking while the node is being asked wait for its answer: none of them below it takes the tip path', async () => {
    const { rpc, state } = node({ head: 1000, finalized: 900 })
    let answer: () => void = () => {}
    const slow = {
      ...rpc,
      request: <T>(method: string, params?: unknown[]) => new Promise<void>((resolve) => (answer = resolve)).then(() => rpc.request<T>(method, params)),
    }
    const finality = createFinality({ rpc: slow, depth: 64 })
    // a worker's slots start together: every range's question arrives before the node's first answer
    const asked = [finality.isFinal(880), finality.isFinal(890), finality.isFinal(900), finality.isFinal(950)]
    answer()
    expect(await Promise.all(asked)).toEqual([true, true, true, false])
    expect(state.calls).toBe(1)
  })

  it('after the first answer, a range past the boundary asking while another’s question is out waits for its answer too', async () => {
    // a backfill started while the node's head was low (a restart, the bench's release): the first answer is far
    // behind, and every range that ends past it must hear the next one, not only the range that asked it
    const { rpc, state } = node({ head: 1000, finalized: 0 })
    let clock = 0
    let answer: () => void = () => {}
    let slowNode = false
    const slow = {
      ...rpc,
      request: <T>(method: string, params?: unknown[]) =>
        slowNode ? new Promise<void>((resolve) => (answer = resolve)).then(() => rpc.request<T>(method, params)) : rpc.request<T>(method, params),
    }
    const finality = createFinality({ rpc: slow, depth: 64, refreshMs: 10, now: () => clock })
    expect(await finality.isFinal(0)).toBe(true)
    slowNode = true
    state.finalized = 900
    clock = 20
    const asked = [finality.isFinal(200), finality.isFinal(600), finality.isFinal(950)]
    answer()
    expect(await Promise.all(asked)).toEqual([true, true, false])
  })

  it('isFinalNow answers from the boundary known and refreshes a stale one behind the answer (a range at the head never waits for the node)', async () => {
    const { rpc, state } = node({ head: 1000, finalized: 900 })
    let clock = 0
    const finality = createFinality({ rpc, depth: 64, refreshMs: 100, now: () => clock })
    expect(await finality.isFinalNow(950)).toBe(false) // no boundary yet: asked and waited for
    expect(finality.boundary()).toBe(900)
    state.finalized = 960
    clock = 200
    const asked = state.calls
    expect(await finality.isFinalNow(950)).toBe(false) // stale: answered from 900, asked behind
    expect(state.calls).toBe(asked + 1)
    await new Promise((resolve) => setImmediate(resolve))
    expect(finality.boundary()).toBe(960)
    expect(await finality.isFinalNow(950)).toBe(true)
  })
})
