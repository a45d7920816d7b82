import { describe, expect, it } from 'vitest'
import { createRandom } from '../../../devnet/random.js'
import { createOperatingPointSearch, type OperatingPoint } from './operating-point.js'

/**
 * The search against simulated nodes, one per kind the bench profiles: it
 * must end near the best point of each, from the defaults' start, within
 * the ~10 s a backfill gives it, and stay there through noisy windows.
 */
const MiB = 2 ** 20
const BLOCK = 0.35 * MiB
/** The client's own cost per request and per block (parse, scan): what caps any node. */
const clientMs = (batch: number) => 0.3 + 0.25 * batch

/** Blocks per second a node delivers at a point (steady state), and whether the point is refused. */
type SimulatedNode = { name: string; rate(point: OperatingPoint): number; mostInFlight?: number }

const cheapBigBatches: SimulatedNode = {
  name: 'cheap big batches (fast)',
  // a fixed round trip, answers written at memory speed: the client's CPU is the limit
  rate: ({ batch, inFlight }) => Math.min((inFlight * batch * 1000) / (2 + 0.02 * batch * 0.35 + clientMs(batch)), 1000 / 0.3),
}

/** The bench's serial profile: one node thread shared by the requests in flight, cost quadratic in the answer's size. */
const serialNode: SimulatedNode = {
  name: 'cost linear in the batch, served serially (serial)',
  rate({ batch, inFlight }) {
    const mib = (batch * BLOCK) / MiB
    const work = 2.5 + batch * (0.05 + 1.8 * 0.35) + 0.3 * mib * mib
    const capacity = 1 / (1 + 0.04 * (inFlight - 1))
    const cycle = Math.max((inFlight * work) / capacity, work + clientMs(batch))
    return (inFlight * batch * 1000) / cycle
  },
}

const remoteNode: SimulatedNode = {
  name: '50 ms latency, 429 over 8 in flight (remote)',
  rate: ({ batch, inFlight }) => Math.min((inFlight * batch * 1000) / (50 + 0.02 * batch + clientMs(batch)), 1000 / 0.3),
  mostInFlight: 8,
}

function bestOf(node: SimulatedNode, maxBatch: number, maxInFlight: number): number {
  let best = 0
  for (let batch = 1; batch <= maxBatch; batch++) for (let inFlight = 1; inFlight <= Math.min(maxInFlight, node.mostInFlight ?? maxInFlight); inFlight++) best = Math.max(best, node.rate({ batch, inFlight }))
  return best
}

/** Runs the search for `seconds` of simulated time; returns the rate delivered at each second. */
function drive(node: SimulatedNode, seconds: number, seed: number, change?: { at: number; node: SimulatedNode }) {
  const random = createRandom(seed)
  const search = createOperatingPointSearch({ start: { batch: 28, inFlight: 4 }, maxBatch: 50, maxInFlight: 8 })
  const delivered: number[] = []
  let now = 0
  let active = node
  let secondBlocks = 0
  let nextSecond = 1000
  while (now < seconds * 1000) {
    if (change && now >= change.at * 1000) active = change.node
    const point = search.point
    if (active.mostInFlight !== undefined && point.inFlight > active.mostInFlight) search.capInFlight(active.mostInFlight)
    // one answer of `batch` blocks; noise of ±10% per answer (a shared machine)
    const rate = active.rate(search.point) * (0.9 + 0.2 * random.next())
    now += (search.point.batch * 1000) / rate
    search.answered(search.epoch, search.point.batch, search.point.batch * BLOCK, now)
    search.tick(now)
    secondBlocks += search.point.batch
    while (now >= nextSecond) {
      delivered.push(active.rate(search.point))
      nextSecond += 1000
    }
  }
  void secondBlocks
  return { delivered, point: search.point, search }
}

describe('the operating point search converges near the best point of each kind of node', () => {
  for (const node of [cheapBigBatches, serialNode, remoteNode]) {
    it(node.name, () => {
      const best = bestOf(node, 50, 8)
      for (const seed of [1, 2, 3, 4, 5, 6]) {
        const { delivered, point } = drive(node, 40, seed)
        // settled within ~10 s: from then on, near the best on average
        const after10 = delivered.slice(10)
        const mean = after10.reduce((sum, rate) => sum + rate, 0) / after10.length
        expect(mean / best, `seed ${seed}: ended at ${JSON.stringify(point)}`).toBeGreaterThan(0.85)
        expect(node.rate(point) / best, `seed ${seed}: ended at ${JSON.stringify(point)}`).toBeGreaterThan(0.85)
      }
    })
  }

  it('never adds load that adds no throughput: on a client-bound node it keeps few in flight', () => {
    const { point } = drive(cheapBigBatches, 40, 7)
    // the client caps delivery long before 8 in flight of batches this size
    expect(point.inFlight).toBeLessThan(8)
  })

  it('follows a node that becomes serial mid-run', () => {
    const best = bestOf(serialNode, 50, 8)
    const { delivered } = drive(cheapBigBatches, 60, 4, { at: 20, node: serialNode })
    const late = delivered.slice(35)
    expect(late.reduce((sum, rate) => sum + rate, 0) / late.length / best).toBeGreaterThan(0.85)
  })

  it('opens a window only once no request sent under an earlier point is still out', () => {
    const search = createOperatingPointSearch({ start: { batch: 10, inFlight: 4 }, maxBatch: 50, maxInFlight: 8, windowMs: 100, minAnswers: 1 })
    const { epoch } = search
    // this point's answers while one sent before it is out: the window would count the old one's time, not its bytes
    search.answered(epoch, 10, 1_000, 0, 1)
    search.answered(epoch, 10, 1_000, 50, 1)
    expect(search.tick(200)).toBe(false)
    // the old request came back: the next answer opens the window, the one after counts
    search.answered(epoch, 10, 1_000, 300, 0)
    search.answered(epoch, 10, 1_000, 350, 0)
    expect(search.tick(400)).toBe(true)
    expect(search.throughput.bytesPerSecond).toBe(10_000)
  })

  it('first tries the same calls over one request more: a node that caps requests in flight refuses it after one window', () => {
    const search = createOperatingPointSearch({ start: { batch: 27, inFlight: 4 }, maxBatch: 50, maxInFlight: 8, windowMs: 100, minAnswers: 1 })
    // the start's first window: its first answer opens it, the next closes it
    search.answered(search.epoch, 27, 1_000, 0)
    search.answered(search.epoch, 27, 1_000, 150)
    expect(search.tick(150)).toBe(true)
    expect(search.point).toEqual({ batch: 18, inFlight: 5 })
  })

  it('stays within caps from push-back', () => {
    const search = createOperatingPointSearch({ start: { batch: 28, inFlight: 8 }, maxBatch: 50, maxInFlight: 8 })
    search.capInFlight(3)
    search.capBatch(10)
    expect(search.point).toEqual({ batch: 10, inFlight: 3 })
  })
})
