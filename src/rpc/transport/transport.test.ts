import type { Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { streamEndlessly } from '../../../test/support/rpc-proxy.js'
import { answerEach, startNode } from '../../../test/support/json-rpc-node.js'
import { createTransport } from './transport.js'

/**
 * The first batch of a method says nothing yet of how large its answers
 * are: a real node answering 50 full blocks of 1 MB in one batch passes
 * geth's 25 MB limit before the transport could know. One call goes first,
 * and every batch after it is sized by the bytes that call answered.
 */
const BLOCK_BYTES = 100_000
let server: Server
let url: string
/** Calls per request the node received, in order (0 for a single call sent alone). */
const received: number[] = []

beforeAll(async () => {
  ;({ server, url } = await startNode((calls, batch, res) => {
    received.push(batch ? calls.length : 0)
    answerEach(res, calls, batch, () => ({ padding: 'x'.repeat(BLOCK_BYTES) }))
  }))
})

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

it('sends one call of a method first, then batches sized by the bytes it answered, for concurrent callers too', async () => {
  const transport = createTransport({ url, timeoutMs: 10_000, maxBatchSize: 50, maxBatchBytes: 10 * BLOCK_BYTES + 1000, concurrency: 4, maxConcurrency: 4, maxAttempts: 2 })
  const spec = (from: number) => ({
    method: 'eth_getBlockByNumber',
    params: Array.from({ length: 40 }, (_, i) => [`0x${(from + i).toString(16)}`, true]),
    readResult: (result: unknown) => (result as { padding: string }).padding.length,
  })
  const results = await Promise.all([transport.callMany(spec(0)), transport.callMany(spec(100))])
  expect(results.flat()).toEqual(new Array(80).fill(BLOCK_BYTES))
  expect(received[0]).toBe(0)
  // 100 kB a call in a 1 MB budget: at most 10 calls a batch
  expect(Math.max(...received.slice(1))).toBeLessThanOrEqual(10)
  expect(received.reduce((sum, calls) => sum + Math.max(calls, 1), 0)).toBe(80)
})

describe('a batch that breaks without naming a limit', () => {
  /** A node behind a proxy that drops the connection on batches of more than 20 calls, or, when `down`, on every request. */
  let node: Server
  let nodeUrl: string
  let down = false
  const lengths: number[] = []
  beforeAll(async () => {
    ;({ server: node, url: nodeUrl } = await startNode((calls, batch, res, req) => {
      lengths.push(calls.length)
      if (down || calls.length > 20) return void req.socket.destroy()
      answerEach(res, calls, batch, ({ params }) => Number(params[0]))
    }))
  })
  afterAll(() => new Promise<void>((resolve) => node.close(() => resolve())))

  const spec = (from: number, count: number) => ({
    method: 'eth_x',
    params: Array.from({ length: count }, (_, i) => [String(from + i)]),
    readResult: (result: unknown) => result as number,
  })

  it('is split after one call alone goes through, a cap is learned, and no request is sent twice unchanged', async () => {
    down = false
    lengths.length = 0
    const transport = createTransport({ url: nodeUrl, timeoutMs: 5_000, maxBatchSize: 50, maxBatchBytes: 2 ** 30, concurrency: 2, maxConcurrency: 2, maxAttempts: 2 })
    expect(await transport.callMany(spec(0, 50))).toEqual(Array.from({ length: 50 }, (_, i) => i))
    // no attempt was spent: with 2 attempts a call, counting the breaks would have failed the call
    expect(await transport.callMany(spec(100, 50))).toEqual(Array.from({ length: 50 }, (_, i) => 100 + i))
    expect(transport.batchSize('eth_x')).toBeLessThanOrEqual(20)
    // learned: the second call's batches no longer break
    const broken = lengths.filter((length) => length > 20).length
    await transport.callMany(spec(200, 50))
    expect(lengths.filter((length) => length > 20).length).toBe(broken)
  })

  it('tells a dead node from a batch problem: single calls fail too, and the calls fail after their attempts', async () => {
    down = false
    const transport = createTransport({ url: nodeUrl, timeoutMs: 5_000, maxBatchSize: 50, maxBatchBytes: 2 ** 30, concurrency: 2, maxConcurrency: 2, maxAttempts: 3, retryDelayMs: 1 })
    // the first call of a method goes alone (it sizes the rest): the node is up for it
    await transport.callMany(spec(0, 1))
    down = true
    lengths.length = 0
    await expect(transport.callMany(spec(0, 20))).rejects.toThrow(/request to the node failed/)
    // the batch, one call alone (fails: the node is down), the batch again after the backoff… three times,
    // not a cascade of halves down to twenty single calls
    expect(lengths).toEqual([20, 1, 20, 1, 20, 1])
  })
})

describe('an answer that never ends', () => {
  /**
   * A proxy in front of the node streams an endless body (a megabyte a
   * write, as fast as it is read) for batches of more than 8 calls, and
   * for the call '666' always.
   */
  let node: Server
  let nodeUrl: string
  const lengths: number[] = []
  /** The calls of each request answered with an endless body. */
  const cutOff: string[] = []
  beforeAll(async () => {
    ;({ server: node, url: nodeUrl } = await startNode((calls, batch, res) => {
      lengths.push(calls.length)
      if (calls.length <= 8 && !calls.some(({ params }) => params[0] === '666')) return answerEach(res, calls, batch, ({ params }) => Number(params[0]))
      cutOff.push(calls.map(({ params }) => params[0]).join())
      streamEndlessly(res)
    }))
  })
  afterAll(() => new Promise<void>((resolve) => node.close(() => resolve())))

  const options = { url: '', timeoutMs: 60_000, maxBatchSize: 40, maxBatchBytes: 2 ** 30, maxAnswerBytes: 4 * 2 ** 20, concurrency: 2, maxConcurrency: 2, maxAttempts: 3, retryDelayMs: 1 }
  const spec = (params: string[]) => ({ method: 'eth_x', params: params.map((param) => [param]), readResult: (result: unknown) => result as number })

  it('is cut off at RPC_MAX_ANSWER_BYTES and its batch asked again in halves, not sent again as it was: every result exact', async () => {
    lengths.length = 0
    cutOff.length = 0
    const kinds: string[] = []
    const transport = createTransport({ ...options, url: nodeUrl, observer: { failure: (kind) => kinds.push(kind) } })
    const started = performance.now()
    const results = await transport.callMany(spec(Array.from({ length: 41 }, (_, i) => String(i))))
    expect(results).toEqual(Array.from({ length: 41 }, (_, i) => i))
    // long before the 60 s timeout: each endless answer was read to 4 MiB, not to the timeout
    expect(performance.now() - started).toBeLessThan(20_000)
    expect(kinds.length).toBeGreaterThan(0)
    expect(new Set(kinds)).toEqual(new Set(['response_too_large']))
    // the sizing call, then batches halved down to 8 or fewer; no request cut off was sent again as it was
    expect(new Set(cutOff).size).toBe(cutOff.length)
    expect(lengths.filter((length) => length <= 8).reduce((sum, length) => sum + length, 0)).toBe(41)
  })

  it('fails the one call whose own answer never ends at once, with what happened: asked again it would be cut again', async () => {
    lengths.length = 0
    const transport = createTransport({ ...options, url: nodeUrl })
    await expect(transport.callMany(spec(['666']))).rejects.toThrow(/passed 4194304 bytes \(RPC_MAX_ANSWER_BYTES\).*one call alone; not asked again/)
    expect(lengths).toEqual([1])
  })
})

describe('batches are cut when their request goes out', () => {
  /** A node that names its batch limit: more than 5 calls get one error object answering the whole batch. */
  let node: Server
  let nodeUrl: string
  const lengths: number[] = []
  beforeAll(async () => {
    ;({ server: node, url: nodeUrl } = await startNode((calls, batch, res) => {
      lengths.push(calls.length)
      if (calls.length > 5) {
        res.setHeader('content-type', 'application/json')
        return void res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch limit 5 exceeded' } }))
      }
      answerEach(res, calls, batch, ({ params }) => Number(params[0]))
    }))
  })
  afterAll(() => new Promise<void>((resolve) => node.close(() => resolve())))

  it('a limit learned from one answer holds for the batches already waiting in line: the node refuses one batch, not one per batch queued', async () => {
    const transport = createTransport({ url: nodeUrl, timeoutMs: 5_000, maxBatchSize: 20, maxBatchBytes: 2 ** 30, concurrency: 1, maxConcurrency: 1, maxAttempts: 2 })
    const params = Array.from({ length: 81 }, (_, i) => [String(i)])
    const results = await transport.callMany({ method: 'eth_x', params, readResult: (result: unknown) => result as number })
    expect(results).toEqual(Array.from({ length: 81 }, (_, i) => i))
    // the single call that sizes the rest, one batch of 20 refused, then every call in batches of at most 5
    // (of 5 until the length search, batch-length.ts, tries a shorter one)
    expect(lengths[0]).toBe(1)
    expect(lengths.filter((length) => length > 5)).toEqual([20])
    expect(lengths.slice(2).every((length) => length <= 5)).toBe(true)
    expect(lengths.slice(2).filter((length) => length === 5).length).toBeGreaterThanOrEqual(12)
  })
})

describe('a node that caps the requests in flight', () => {
  /** Holds each answer 20 ms; a request arriving while 2 are held is answered 429 with Retry-After: 0. */
  let node: Server
  let nodeUrl: string
  const lengths: number[] = []
  let refused = 0
  beforeAll(async () => {
    let held = 0
    ;({ server: node, url: nodeUrl } = await startNode((calls, batch, res) => {
      if (held >= 2) {
        refused++
        res.writeHead(429, { 'retry-after': '0', 'content-type': 'application/json' })
        return void res.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"too many requests"}}')
      }
      held++
      lengths.push(calls.length)
      setTimeout(() => {
        held--
        answerEach(res, calls, batch, () => ({ padding: 'x'.repeat(BLOCK_BYTES) }))
      }, 20)
    }))
  })
  afterAll(() => new Promise<void>((resolve) => node.close(() => resolve())))

  it('is asked more per request once it refused more of them: the answers in flight carry as many bytes as at the most', async () => {
    // 4 in flight of 10 blocks each at the most; the node takes 2, so each may carry 20
    const transport = createTransport({ url: nodeUrl, timeoutMs: 5_000, maxBatchSize: 1_000, maxBatchBytes: 10 * BLOCK_BYTES + 1000, concurrency: 4, maxConcurrency: 4, maxAttempts: 5 })
    const spec = (from: number) => ({
      method: 'eth_getBlockByNumber',
      params: Array.from({ length: 40 }, (_, i) => [`0x${(from + i).toString(16)}`, true]),
      // not paced: the throughput search (which moves the batch size by measured time) stays out of a test of the byte share
      readResult: (result: unknown) => (result as { padding: string }).padding.length,
    })
    const results = await Promise.all([0, 100, 200, 300].map((from) => transport.callMany(spec(from))))
    expect(results.flat()).toEqual(new Array(160).fill(BLOCK_BYTES))
    expect(refused).toBeGreaterThan(0)
    expect(transport.operatingPoint.mostInFlight).toBe(2)
    // before the refusal at most 10 blocks a request; after it more (20, or shorter where the length search,
    // batch-length.ts, tries one), never more than 20
    expect(Math.max(...lengths)).toBeGreaterThan(10)
    expect(Math.max(...lengths)).toBeLessThanOrEqual(20)
    expect(transport.batchSize('eth_getBlockByNumber')).toBeLessThanOrEqual(20)
  })
})
