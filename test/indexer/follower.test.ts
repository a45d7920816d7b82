import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { appendTruth, emptyTruth, totalsByCode, type GroundTruth } from '../../devnet/ledger.js'
import { countPending } from '../../src/store/ranges.js'
import { startTestChain, sendMixedTraffic, type TestChain } from '../support/chain.js'
import { indexerEnv, startTestIndexer, totalsFromIndex, waitForIndexed } from '../support/indexer.js'
import { chainsEnv, spawnRole } from '../support/processes.js'
import { startRpcProxy } from '../support/rpc-proxy.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { until } from '../support/poll.js'

let chain: TestChain
/** Everything this file sent to the chain: each test indexes the chain from block 0 into a fresh database. */
const sent: GroundTruth = emptyTruth()

async function send(options: { transactions: number; blocks: number }): Promise<GroundTruth> {
  const truth = await sendMixedTraffic(chain, options)
  appendTruth(sent, truth)
  return truth
}

beforeAll(async () => {
  chain = await startTestChain()
}, 60_000)

afterAll(async () => {
  await chain?.stop()
})

async function withServices(name: string, body: (db: TestDatabase, redis: TestRedis) => Promise<void>) {
  const [database, redis] = await Promise.all([createTestDatabase(name), createTestRedis()])
  try {
    await body(database, redis)
  } finally {
    await database.drop()
    await redis.cleanup()
  }
}

describe('follower', () => {
  it('stops cutting ranges while MAX_PENDING_RANGES wait, and resumes as workers drain them', async () => {
    await send({ transactions: 80, blocks: 40 })
    const head = Number(await chain.client.getBlockNumber())
    await withServices('backpressure', async (database, redis) => {
      const env = indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix, extra: { RANGE_SIZE: '2', MAX_PENDING_RANGES: '3' } })
      // the follower reads the head through a proxy that counts its calls: the proof it kept ticking
      const proxy = await startRpcProxy({ target: chain.rpcUrl })
      const follower = await startTestIndexer({ db: database.db, env, chains: [{ ...chain.config, rpcUrl: proxy.url }], roles: { follower: true, worker: false } })
      const headCalls = () => proxy.methodCalls['eth_getBlockByNumber'] ?? 0
      try {
        await until('3 pending ranges', async () => (await countPending(database.db.$client, chain.chainId)) >= 3)
        // three more calls to the node after the limit was reached: the follower looked again and cut nothing
        const reached = headCalls()
        await until('three more follower ticks', () => headCalls() >= reached + 3)
        expect(await countPending(database.db.$client, chain.chainId)).toBe(3)
        expect(await follower.queue.getWaitingCount()).toBe(3)
        const worker = await startTestIndexer({ db: database.db, env, chains: [chain.config], roles: { follower: false, worker: true } })
        try {
          await waitForIndexed(database.db, chain.chainId, head)
        } finally {
          await worker.stop()
        }
      } finally {
        await follower.stop()
        await proxy.close()
      }
    })
  })

  it('a second follower process takes over when the active one is killed', async () => {
    await withServices('takeover', async (database, redis) => {
      const env = {
        ...indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix }),
        CHAINS: chainsEnv([chain.config]),
        LOG_LEVEL: 'info',
      }
      const worker = await startTestIndexer({ db: database.db, env, chains: [chain.config], roles: { follower: false, worker: true } })
      const followers = [spawnRole('follower', env), spawnRole('follower', env)]
      try {
        await send({ transactions: 20, blocks: 5 })
        await waitForIndexed(database.db, chain.chainId, Number(await chain.client.getBlockNumber()))
        const active = followers.find((f) => f.output().includes('follower lock acquired'))!
        const standby = followers.find((f) => f !== active)!
        expect(standby.output()).not.toContain('follower lock acquired')
        await active.kill('SIGKILL')
        await send({ transactions: 20, blocks: 5 })
        await waitForIndexed(database.db, chain.chainId, Number(await chain.client.getBlockNumber()), 30_000)
        expect(standby.output()).toContain('follower lock acquired')
        // everything sent before and after the takeover (and by earlier tests) counted exactly once: none lost, none doubled
        expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(totalsByCode(sent))
      } finally {
        await Promise.all(followers.map((f) => f.kill('SIGTERM')))
        await worker.stop()
      }
    })
  })

  it('a node that lags behind the index is waited for, not taken for a reorg', async () => {
    await withServices('lagging', async (database, redis) => {
      const proxy = await startRpcProxy({ target: chain.rpcUrl })
      const env = indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix })
      const indexer = await startTestIndexer({ db: database.db, env, chains: [{ ...chain.config, rpcUrl: proxy.url }] })
      try {
        await send({ transactions: 12, blocks: 3 })
        const head = Number(await chain.client.getBlockNumber())
        await waitForIndexed(database.db, chain.chainId, head)
        const before = await totalsFromIndex(database.db, chain.chainId)
        // the node now answers as if it were 3 blocks behind: an older head and no newer blocks
        const lag = 3
        const lagging = { headsServed: 0 }
        proxy.setRewrite((request, response) => lagBehind(request, response, head - lag, lagging))
        // three lagging heads served: the follower compared the index with the lagging node three times
        await until('three lagging heads served', () => lagging.headsServed >= 3)
        const [row] = await database.db.$client<{ ranges: number }[]>`select count(*)::int as ranges from ranges where to_block > ${head - lag}`
        // the ranges above the lagging node's head were kept: no rollback happened
        expect(row!.ranges).toBeGreaterThan(0)
        expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(before)
        proxy.setRewrite(undefined)
        await send({ transactions: 8, blocks: 2 })
        await waitForIndexed(database.db, chain.chainId, Number(await chain.client.getBlockNumber()))
        expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(totalsByCode(sent))
      } finally {
        await indexer.stop()
        await proxy.close()
      }
    })
  })

  it('wakes on new heads over the websocket instead of waiting for the poll', async () => {
    await withServices('websocket', async (database, redis) => {
      const env = indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix })
      const slowPoll = { ...chain.config, pollIntervalMs: 120_000, wsUrl: chain.anvil.wsUrl }
      const indexer = await startTestIndexer({ db: database.db, env, chains: [slowPoll] })
      try {
        await waitForIndexed(database.db, chain.chainId, Number(await chain.client.getBlockNumber()))
        await send({ transactions: 4, blocks: 1 })
        // far less than the 120 s poll interval: only a websocket wake-up can do it
        await waitForIndexed(database.db, chain.chainId, Number(await chain.client.getBlockNumber()), 20_000)
      } finally {
        await indexer.stop()
      }
    })
  })
})

type RpcCall = { id: number; method: string; params?: unknown[] }

/** Rewrites answers as a node whose head is `head` would give them. */
function lagBehind(request: unknown, response: unknown, head: number, seen: { headsServed: number }): unknown {
  if (Array.isArray(request) && Array.isArray(response)) {
    return response.map((item: { id: number }) => lagBehind(request.find((r: RpcCall) => r.id === item.id), item, head, seen))
  }
  const call = request as RpcCall
  const answer = response as { result?: unknown }
  if (call.method === 'eth_blockNumber') return { ...answer, result: `0x${head.toString(16)}` }
  if (call.method === 'eth_getBlockByNumber') {
    const tag = call.params?.[0]
    const number = tag === 'latest' ? head : Number.parseInt(String(tag), 16)
    if (number > head) return { ...answer, result: null }
    if (tag === 'latest') {
      seen.headsServed++
      return { ...answer, result: { ...(answer.result as object), number: `0x${head.toString(16)}` } }
    }
  }
  return response
}
