import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { until } from '../../../test/support/poll.js'
import { createEndpoint, createEndpointPool } from './endpoint-pool.js'
import { BlockNotFoundError } from '../errors.js'
import type { Transport } from '../transport/transport.js'

/**
 * The pool's routing on simulated endpoints (the transports' own behaviour
 * is theirs; the endpoint tests in test/indexer run real nodes): an endpoint
 * that answers an item in `msPerItem`, fails while `down`, lacks blocks
 * above `head`.
 */
function simulated(options: { msPerItem: number }) {
  const node = { down: false, calls: 0, probes: 0, chainId: 8453 }
  const transport = {
    async call(method: string) {
      if (method === 'eth_blockNumber' || method === 'eth_chainId') node.probes++
      if (node.down) throw new Error('connect ECONNREFUSED')
      return method === 'eth_chainId' ? `0x${node.chainId.toString(16)}` : '0x1'
    },
  } as unknown as Transport
  return { node, transport, options }
}

/** A work of `items` items on an endpoint: takes its time, fails when it is down. */
const work = (nodes: Map<Transport, ReturnType<typeof simulated>>, items: number) => async (endpoint: { transport: Transport }) => {
  const sim = nodes.get(endpoint.transport)!
  sim.node.calls++
  await sleep(sim.options.msPerItem * items)
  if (sim.node.down) throw new Error('connect ECONNREFUSED')
  return items
}

/** A clock the test moves: the endpoints' health (cool-downs) and meters read it. */
function manualClock() {
  let ms = 1_000_000
  return { now: () => ms, advance: (by: number) => (ms += by) }
}

describe('endpoint pool', () => {
  it('spreads work in proportion to measured throughput', async () => {
    const fast = simulated({ msPerItem: 1 })
    const slow = simulated({ msPerItem: 4 })
    const nodes = new Map([fast, slow].map((sim) => [sim.transport, sim]))
    const pool = createEndpointPool([createEndpoint('http://fast.example', fast.transport), createEndpoint('http://slow.example', slow.transport)])
    // 8 works in flight at a time, for long enough that both meters close windows
    const deadline = Date.now() + 5_000
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (Date.now() < deadline) await pool.run(10, work(nodes, 10))
      }),
    )
    const [fastState, slowState] = pool.states()
    expect(fastState!.items).toBeGreaterThan(2 * slowState!.items)
    expect(slowState!.items).toBeGreaterThan(0)
  }, 20_000)

  it('does a failed work on another endpoint, routes around the sick one, and takes it back once a probe answers', async () => {
    const a = simulated({ msPerItem: 1 })
    const b = simulated({ msPerItem: 1 })
    const nodes = new Map([a, b].map((sim) => [sim.transport, sim]))
    const clock = manualClock()
    const pool = createEndpointPool([createEndpoint('http://a.example', a.transport, clock.now), createEndpoint('http://b.example', b.transport, clock.now)])
    b.node.down = true
    // four at a time, so that b is given some: every work still succeeds (on a)
    for (let i = 0; i < 10; i++) expect(await Promise.all([1, 2, 3, 4].map(() => pool.run(1, work(nodes, 1))))).toEqual([1, 1, 1, 1])
    expect(pool.states()[1]!.state).toBe('sick')
    // routed around: b got only the works that were given to it before the first one failed
    expect(b.node.calls).toBeGreaterThan(0)
    expect(b.node.calls).toBeLessThanOrEqual(2)
    b.node.down = false
    // within the cool-down (1 s) no probe goes
    clock.advance(999)
    await pool.run(1, work(nodes, 1))
    expect(b.node.probes).toBe(0)
    clock.advance(1)
    await pool.run(1, work(nodes, 1)) // the cool-down is over: this choice sends the probe
    await until('the probe took b back', () => pool.states()[1]!.state === 'healthy')
    expect(b.node.probes).toBe(1)
  })

  it('moves a work an endpoint lacks the block for, without calling the endpoint sick', async () => {
    const behind = simulated({ msPerItem: 0 })
    const ahead = simulated({ msPerItem: 0 })
    const pool = createEndpointPool([createEndpoint('http://behind.example', behind.transport), createEndpoint('http://ahead.example', ahead.transport)])
    const result = await pool.run(1, async (endpoint) => {
      if (endpoint.transport === behind.transport) throw new BlockNotFoundError(7)
      return 'block 7'
    })
    expect(result).toBe('block 7')
    expect(pool.states().map((state) => state.state)).toEqual(['healthy', 'healthy'])
  })

  it('fails a work only when every endpoint failed it', async () => {
    const a = simulated({ msPerItem: 0 })
    const b = simulated({ msPerItem: 0 })
    const nodes = new Map([a, b].map((sim) => [sim.transport, sim]))
    a.node.down = b.node.down = true
    const pool = createEndpointPool([createEndpoint('http://a.example', a.transport), createEndpoint('http://b.example', b.transport)])
    await expect(pool.run(1, work(nodes, 1))).rejects.toThrow('ECONNREFUSED')
    expect(a.node.calls + b.node.calls).toBe(2)
  })

  it('refuses an endpoint of another chain, and keeps one that was down out until its probe finds the right chain', async () => {
    const a = simulated({ msPerItem: 0 })
    const b = simulated({ msPerItem: 0 })
    const clock = manualClock()
    const pool = createEndpointPool([
      createEndpoint('http://a.example', a.transport, clock.now),
      createEndpoint('http://b.example/v2/oKxs8xQ3bZ1yN7kP0aLmT4', b.transport, clock.now),
    ])
    b.node.chainId = 10
    await expect(pool.requireChainId(8453)).rejects.toThrow('the RPC at http://b.example/v2/*** serves chain 10, but it is listed among the endpoints of chain 8453')
    b.node.down = true
    await pool.requireChainId(8453)
    expect(pool.states()[1]!.state).toBe('sick')
    // back, but as another chain's node: its probe keeps it out
    b.node.down = false
    clock.advance(1_000)
    const probesBefore = b.node.probes
    await pool.run(1, async () => 1)
    // the probe answered (its chain id asked) and was judged: sick again, with why
    await until('the probe was judged', () => b.node.probes > probesBefore && pool.states()[1]!.state === 'sick')
    expect(pool.states()[1]!).toMatchObject({ state: 'sick', lastError: 'serves chain 10, not chain 8453' })
  })

  it('shows URLs redacted', () => {
    const pool = createEndpointPool([createEndpoint('https://base.example/v2/oKxs8xQ3bZ1yN7kP0aLmT4', simulated({ msPerItem: 0 }).transport)])
    expect(pool.states()[0]!.url).toBe('https://base.example/v2/***')
  })
})
