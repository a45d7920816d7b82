import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedis } from '../../src/redis/client.js'
import { MAX_LOG_QUERIES, MAX_NODE_CALLS_PER_LOOKUP } from '../../src/validation/rpc-lookup.js'
import { request, type TestApi } from '../support/api.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { startRpcProxy, type RpcProxy } from '../support/rpc-proxy.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { from, limitedApis, refusals } from './support.js'

/**
 * Issue 20, item 4: anonymous validation spent the operator's node for
 * anyone (150 lookups of unknown hashes from one IP, 300 node calls). Here a
 * counting proxy stands for the validator's own node (VALIDATE_RPC_URL; the
 * indexer's URL in CHAINS goes nowhere), and every test counts what the node
 * was asked: one client's lookups stop at its budget, a repeated unknown
 * hash costs nothing, one lookup costs a bounded number of calls, all
 * clients together stop at theirs, and at most VALIDATE_RPC_CONCURRENCY ask
 * at once.
 */
let chain: TestChain
let proxy: RpcProxy
let database: TestDatabase
let redis: TestRedis
let attributedTx: string
const apis = limitedApis(() => ({ database, redis }))

/** An RPC URL nothing listens on: the indexer's node, which validation must never ask. */
const INDEXER_RPC_URL = 'http://127.0.0.1:9'

beforeAll(async () => {
  ;[chain, database, redis] = await Promise.all([startTestChain(), createTestDatabase('budget'), createTestRedis()])
  proxy = await startRpcProxy({ target: chain.rpcUrl })
  const truth = await sendMixedTraffic(chain, { transactions: 6, blocks: 1 })
  attributedTx = truth.attributions[0]!.txHash
}, 120_000)

afterAll(async () => {
  await apis.close()
  await proxy?.close()
  await chain?.stop()
  await redis?.cleanup()
  await database?.drop()
})

/** An API validating through `validateRpcUrl` (the proxy unless given), with these limits. */
function startApi(env: Record<string, string>, deps: Parameters<typeof apis.start>[1] = {}, validateRpcUrl = proxy.url) {
  return apis.start(
    {
      CHAINS: JSON.stringify([{ chainId: chain.chainId, rpcUrl: INDEXER_RPC_URL, entryPoints: chain.config.entryPoints }]),
      VALIDATE_RPC_URL: validateRpcUrl,
      VALIDATE_CACHE_MS: '0',
      VALIDATE_RATE_LIMIT_MAX: '1000',
      VALIDATE_RPC_MAX: '1000',
      ...env,
    },
    deps,
  )
}

const unknownHash = () => `0x${randomBytes(32).toString('hex')}`
const validate = (api: TestApi, ip: string, hash: string, type = 'transaction') =>
  request(`${api.url}/v1/attribution/validate?type=${type}&hash=${hash}`, { headers: from(ip) })
const nodeCalls = () => Object.values(proxy.methodCalls).reduce((sum, count) => sum + count, 0)

describe('validation’s node (VALIDATE_RPC_URL)', () => {
  it('is asked instead of the indexer’s', async () => {
    const api = await startApi({})
    const before = nodeCalls()
    const response = await validate(api, '192.0.2.1', attributedTx)
    expect(response.status).toBe(200)
    expect(response.body).toMatchObject({ attributed: true, source: 'rpc', transactionHash: attributedTx })
    expect(nodeCalls() - before).toBe(2)
  })
})

describe('one client’s lookups (VALIDATE_RATE_LIMIT_*)', () => {
  it('reach the node up to the budget, then 429; a repeated unknown hash and another client cost the node nothing more', async () => {
    const api = await startApi({ VALIDATE_RATE_LIMIT_MAX: '5', VALIDATE_RATE_LIMIT_WINDOW_MS: '600000' })
    const before = nodeCalls()
    const hashes = Array.from({ length: 8 }, unknownHash)
    const statuses = []
    for (const hash of hashes) statuses.push((await validate(api, '192.0.2.10', hash)).status)
    expect(statuses).toEqual([404, 404, 404, 404, 404, 429, 429, 429])
    // a transaction lookup is its transaction and its receipt
    expect(nodeCalls() - before).toBe(10)

    const refused = await validate(api, '192.0.2.10', unknownHash())
    expect(refused.body).toEqual({
      success: false,
      error: {
        code: 'rate_limited',
        message: expect.stringMatching(/^validation: more than 5 lookups of hashes the index does not hold in 600 s from this client; retry in \d+ s$/),
      },
    })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(590)

    const repeats = []
    for (let i = 0; i < 10; i++) repeats.push(await validate(api, '192.0.2.10', hashes[0]!))
    expect(repeats.map((response) => response.status)).toEqual(Array(10).fill(404))
    expect(repeats[9]!.body.error.message).toBe(`transaction ${hashes[0]} is not known to chain ${chain.chainId}`)
    expect((await validate(api, '192.0.2.11', unknownHash())).status).toBe(404)
    expect(nodeCalls() - before).toBe(12)
    expect((await refusals(api)).validate_per_client).toBe(4)
  })

  it('are counted in this process while Redis is down, not admitted blind', async () => {
    const unreachable = createRedis('redis://127.0.0.1:1', 'request')
    try {
      const api = await startApi({ VALIDATE_RATE_LIMIT_MAX: '2' }, { redis: unreachable })
      const statuses = []
      for (let i = 0; i < 4; i++) statuses.push((await validate(api, '192.0.2.12', unknownHash())).status)
      expect(statuses).toEqual([404, 404, 429, 429])
    } finally {
      unreachable.disconnect()
    }
  })
})

describe('one lookup', () => {
  it('costs the node at most MAX_NODE_CALLS_PER_LOOKUP calls, even when the node takes tiny log ranges', async () => {
    // a few hundred blocks, and a node that answers logs over 10 blocks at most: the search would need 30 queries
    await chain.mine(300)
    proxy.setLimits({ maxLogRange: 10 })
    try {
      const api = await startApi({ VALIDATE_LOG_WINDOW: '1000000' })
      const before = nodeCalls()
      const response = await validate(api, '192.0.2.20', unknownHash(), 'userOperation')
      expect(response.status).toBe(404)
      expect(response.body.error.message).toMatch(/the search gave up there after 8 log queries \(the node's log range is now \d+ blocks\)$/)
      // the head, then the log queries (refused ones included); no bundle was found to read
      const calls = nodeCalls() - before
      expect(calls).toBe(1 + MAX_LOG_QUERIES)
      expect(calls).toBeLessThanOrEqual(MAX_NODE_CALLS_PER_LOOKUP)
      expect(proxy.limitCounts.log_range_refused).toBeGreaterThan(0)
    } finally {
      proxy.setLimits({})
    }
  })
})

describe('all clients together (VALIDATE_RPC_MAX)', () => {
  it('stop at the shared budget with 503 and Retry-After', async () => {
    const api = await startApi({ VALIDATE_RATE_LIMIT_MAX: '5', VALIDATE_RPC_MAX: '6', VALIDATE_RATE_LIMIT_WINDOW_MS: '600000' })
    const statuses = []
    for (const ip of ['192.0.2.30', '192.0.2.30', '192.0.2.30', '192.0.2.30', '192.0.2.30', '192.0.2.31', '192.0.2.31', '192.0.2.32']) {
      statuses.push((await validate(api, ip, unknownHash())).status)
    }
    expect(statuses).toEqual([404, 404, 404, 404, 404, 404, 503, 503])
    const refused = await validate(api, '192.0.2.33', unknownHash())
    expect(refused.body.error).toEqual({ code: 'service_unavailable', message: expect.stringMatching(/^validation: the node's budget of 6 lookups in 600 s is spent; retry in \d+ s$/) })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(590)
    // answers that need no node are never refused
    expect((await refusals(api)).validate_node_total).toBe(3)
  })
})

/** A node that holds every answer until released: what "in flight" means is decided by the test, not by timing. */
async function startHoldingNode(chainId: number) {
  const held: Array<() => void> = []
  let calls = 0
  const server: Server = createServer((request: IncomingMessage, response) => {
    let body = ''
    request.on('data', (chunk) => (body += chunk))
    request.on('end', () => {
      calls++
      const call = JSON.parse(body) as { id: number; method: string }
      const result = call.method === 'eth_chainId' ? `0x${chainId.toString(16)}` : null
      held.push(() => response.setHeader('content-type', 'application/json').end(JSON.stringify({ jsonrpc: '2.0', id: call.id, result })))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: () => calls,
    held: () => held.length,
    releaseAll: () => held.splice(0).forEach((answer) => answer()),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

describe('lookups in flight (VALIDATE_RPC_CONCURRENCY)', () => {
  it('ask the node one at a time here, let 8 wait, and refuse the rest with 503', async () => {
    const node = await startHoldingNode(chain.chainId)
    try {
      const api = await startApi({ VALIDATE_RPC_CONCURRENCY: '1' }, {}, node.url)
      const answers: Array<number | undefined> = Array(20).fill(undefined)
      const requests = Array.from({ length: 20 }, (_, i) =>
        validate(api, `192.0.2.${100 + i}`, unknownHash()).then((response) => (answers[i] = response.status)),
      )
      // the first lookup holds the node (its transaction and receipt), 8 wait behind it, 11 are refused at once
      await expect.poll(() => ({ atNode: node.held(), refused: answers.filter((status) => status === 503).length }), { timeout: 15_000 })
        .toEqual({ atNode: 2, refused: 11 })
      expect(answers.filter((status) => status !== 503 && status !== undefined)).toEqual([])
      // released one lookup at a time: never more than one asks the node
      while (answers.includes(undefined)) {
        expect(node.held()).toBeLessThanOrEqual(2)
        node.releaseAll()
        await expect.poll(() => node.held() === 2 || !answers.includes(undefined), { timeout: 15_000 }).toBe(true)
      }
      await Promise.all(requests)
      expect(answers.filter((status) => status === 404)).toHaveLength(9)
      expect(node.calls()).toBe(18)
      expect((await refusals(api)).validate_node_busy).toBe(11)
    } finally {
      await node.close()
    }
  })
})

/**
 * Issue: validation asked only the first URL of a chain. Now a lookup asks
 * the chain's endpoints in order, moving on from one that is down, failing
 * (5xx) or over its quota (429); the budget is still spent once per lookup.
 */
describe('a chain of several endpoints (CHAINS[].rpcUrls)', () => {
  /** An API whose chain lists `rpcUrls`, without VALIDATE_RPC_URL unless given. */
  function startApiOver(rpcUrls: string[], env: Record<string, string> = {}) {
    return apis.start({
      CHAINS: JSON.stringify([{ chainId: chain.chainId, rpcUrls, entryPoints: chain.config.entryPoints }]),
      VALIDATE_CACHE_MS: '0',
      VALIDATE_RATE_LIMIT_MAX: '1000',
      VALIDATE_RPC_MAX: '1000',
      ...env,
    })
  }

  it('asks the next endpoint when the first is dead, and the budget still counts lookups, not endpoints tried', async () => {
    const api = await startApiOver([INDEXER_RPC_URL, proxy.url], { VALIDATE_RATE_LIMIT_MAX: '3', VALIDATE_RATE_LIMIT_WINDOW_MS: '600000' })
    const before = nodeCalls()
    const found = await validate(api, '192.0.2.40', attributedTx)
    expect(found.status).toBe(200)
    expect(found.body).toMatchObject({ attributed: true, source: 'rpc', transactionHash: attributedTx })
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await validate(api, '192.0.2.40', unknownHash())).status)
    // 3 lookups admitted (the found one and two misses), each a transaction and a receipt at the live endpoint
    expect(statuses).toEqual([404, 404, 429])
    expect(nodeCalls() - before).toBe(6)
  })

  it('moves on from an endpoint answering 503 or 429, and answers 502 naming no URL when every endpoint fails', async () => {
    const failing = await startRpcProxy({ target: chain.rpcUrl, fault: () => '503' })
    const limited = await startRpcProxy({ target: chain.rpcUrl, fault: () => '429' })
    try {
      const api = await startApiOver([failing.url, limited.url, proxy.url])
      const before = nodeCalls()
      expect((await validate(api, '192.0.2.41', attributedTx)).status).toBe(200)
      // the lookup's two calls (transaction, receipt) start on the endpoints that would finish them soonest (the
      // pool: the first, then the next with less outstanding); each refused moves on, and the refusers are left sick
      expect(failing.counts['503']).toBe(1)
      expect(limited.counts['429']).toBe(1)
      expect(nodeCalls() - before).toBe(2)

      const allDown = await startApiOver([failing.url, INDEXER_RPC_URL])
      const response = await validate(allDown, '192.0.2.42', attributedTx)
      expect(response.status).toBe(502)
      expect(JSON.stringify(response.body)).not.toContain(failing.url)
    } finally {
      await failing.close()
      await limited.close()
    }
  })

  it('asks VALIDATE_RPC_URL alone when it is set, never the indexer’s endpoints after it', async () => {
    const indexers = await startRpcProxy({ target: chain.rpcUrl })
    try {
      const api = await startApiOver([indexers.url, proxy.url], { VALIDATE_RPC_URL: INDEXER_RPC_URL })
      const response = await validate(api, '192.0.2.43', attributedTx)
      expect(response.status).toBe(502)
      expect(Object.values(indexers.methodCalls).reduce((sum, count) => sum + count, 0)).toBe(0)
    } finally {
      await indexers.close()
    }
  })
})
