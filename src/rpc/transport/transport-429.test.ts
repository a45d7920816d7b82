import type { Server } from 'node:http'
import { describe, expect, it } from 'vitest'
import { answerEach, refuse, startNode } from '../../../test/support/json-rpc-node.js'
import { createTransport } from './transport.js'

/**
 * A 429 and its Retry-After. A node that takes one request fewer than were
 * sent refuses the one too many: the cap drops below it, the refused calls
 * alone wait, and the requests it takes go on. A refusal met again at that
 * cap is a rate limit: every request of the node waits out the Retry-After.
 * Judged by the order of what the node saw and by what the transport says
 * it did (its `paused` signal), never by a window of wall-clock time.
 */

type Arrival = { first: string; refused: boolean }

/**
 * A node that holds each answer 20 ms and refuses with Retry-After: 1 the
 * requests `refuses` picks (by arrival, from 1, and the answers held);
 * `arrivals` records each request's first block and whether it was refused.
 */
async function refusingNode(refuses: (arrival: number, held: number) => boolean) {
  const arrivals: Arrival[] = []
  let held = 0
  const node = await startNode((calls, batch, res) => {
    const refused = refuses(arrivals.length + 1, held)
    arrivals.push({ first: calls[0]!.params[0], refused })
    if (refused) return refuse(res, '1')
    held++
    setTimeout(() => {
      held--
      answerEach(res, calls, batch, () => ({ padding: 'x'.repeat(1_000) }))
    }, 20)
  })
  return { ...node, arrivals }
}

/** 8 callers of 30 blocks each, 3 in flight at first, batches of 5; what the transport said of refusals and pauses. */
async function fetchThrough(nodeUrl: string, hooks: { refused?: () => void; paused?: () => void } = {}) {
  const pauses: number[] = []
  const transport = createTransport({
    url: nodeUrl,
    timeoutMs: 5_000,
    maxBatchSize: 5,
    maxBatchBytes: 2 ** 30,
    concurrency: 3,
    maxConcurrency: 3,
    maxAttempts: 5,
    observer: {
      paused: (ms) => {
        pauses.push(ms)
        hooks.paused?.()
      },
      failure: (kind) => kind === 'rate_limited' && hooks.refused?.(),
    },
  })
  const spec = (from: number) => ({
    method: 'eth_getBlockByNumber',
    params: Array.from({ length: 30 }, (_, i) => [`0x${(from + i).toString(16)}`, true]),
    paced: true,
    readResult: (result: unknown) => (result as { padding: string }).padding.length,
  })
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => transport.callMany(spec(i * 100))))
  expect(results.flat()).toEqual(new Array(240).fill(1_000))
  return { transport, pauses }
}

const closed = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()))

describe("a 429's Retry-After", () => {
  it('of a node that takes one request fewer than were sent holds back only the refused calls: the requests it takes go on', async () => {
    const node = await refusingNode((_arrival, held) => held >= 2)
    try {
      const { transport, pauses } = await fetchThrough(node.url)
      const firstRefusal = node.arrivals.findIndex((arrival) => arrival.refused)
      expect(firstRefusal).toBeGreaterThanOrEqual(0)
      expect(transport.operatingPoint.mostInFlight).toBe(2)
      expect(pauses).toEqual([])
      // the refused batch is asked again after its second; requests at the new cap reached the node before that
      const refusedBatch = node.arrivals[firstRefusal]!.first
      const askedAgain = node.arrivals.findIndex((arrival, i) => i > firstRefusal && arrival.first === refusedBatch)
      expect(askedAgain).toBeGreaterThan(firstRefusal)
      expect(node.arrivals.slice(firstRefusal + 1, askedAgain).filter((arrival) => !arrival.refused).length).toBeGreaterThan(0)
    } finally {
      await closed(node.server)
    }
  })

  it('met again at the cap the first one set pauses every request of the node for its Retry-After', async () => {
    // the third request is refused; once the transport has that refusal in hand, the node refuses every request
    // until the transport says it paused: the ones sent beside the first (the same burst) are not at the cap, the
    // first sent after it is
    let seenByTransport = false
    let paused = false
    const node = await refusingNode((arrival) => arrival === 3 || (seenByTransport && !paused))
    try {
      const { pauses } = await fetchThrough(node.url, { refused: () => (seenByTransport = true), paused: () => (paused = true) })
      expect(pauses.length).toBeGreaterThan(0)
      expect(pauses.every((ms) => ms === 1_000)).toBe(true)
    } finally {
      await closed(node.server)
    }
  })
})
