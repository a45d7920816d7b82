import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dayOf } from '../../src/store/buckets.js'
import { isValidCode } from '../../src/attribution/codes.js'
import { totalsByCode, type GroundTruth } from '../../devnet/ledger.js'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { indexerEnv, startTestIndexer, waitForIndexed } from '../support/indexer.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

/**
 * The analytics API over what the real indexer wrote for traffic on two
 * anvil chains, against the traffic generator's ground truth: totals, the
 * per-chain split, the daily series and the leaderboard.
 */
let chains: TestChain[]
let truths: GroundTruth[]
let database: TestDatabase
let redis: TestRedis
let api: TestApi

type Expected = { transactions: number; userOperations: number; total: number; reverted: number; suffixGas: number }

const zero = (): Expected => ({ transactions: 0, userOperations: 0, total: 0, reverted: 0, suffixGas: 0 })

/** Ground truth per code, for one chain or summed over all. */
function expectedTotals(which: GroundTruth[]): Map<string, Expected> {
  const result = new Map<string, Expected>()
  for (const truth of which) {
    for (const [code, totals] of Object.entries(totalsByCode(truth))) {
      const entry = result.get(code) ?? zero()
      entry.transactions += totals.transactions
      entry.userOperations += totals.userOperations
      entry.total += totals.transactions + totals.userOperations
      entry.reverted += totals.reverted
      entry.suffixGas += totals.suffixGas
      result.set(code, entry)
    }
  }
  return result
}

/** Successful transactions and UserOperations per code and UTC day, from the blocks' own timestamps. */
async function expectedDaily(): Promise<Map<string, Map<string, { transactions: number; userOperations: number }>>> {
  const result = new Map<string, Map<string, { transactions: number; userOperations: number }>>()
  for (const [index, truth] of truths.entries()) {
    const dayOfBlock = new Map<number, string>()
    for (const row of truth.attributions) {
      if (row.status !== 'success') continue
      if (!dayOfBlock.has(row.blockNumber)) {
        const block = await chains[index]!.client.getBlock({ blockNumber: BigInt(row.blockNumber) })
        dayOfBlock.set(row.blockNumber, dayOf(new Date(Number(block.timestamp) * 1000)))
      }
      const byDay = result.get(row.code) ?? new Map()
      const point = byDay.get(dayOfBlock.get(row.blockNumber)!) ?? { transactions: 0, userOperations: 0 }
      if (row.kind === 'transaction') point.transactions += 1
      else point.userOperations += 1
      byDay.set(dayOfBlock.get(row.blockNumber)!, point)
      result.set(row.code, byDay)
    }
  }
  return result
}

/** Leaderboard order: successful total descending, ties by code; invalid codes are not listed by default. */
function expectedRanking(totals: Map<string, Expected>, limit: number) {
  return [...totals.entries()]
    .filter(([code, entry]) => entry.total > 0 && isValidCode(code))
    .sort(([codeA, a], [codeB, b]) => b.total - a.total || (codeA < codeB ? -1 : 1))
    .slice(0, limit)
    .map(([code, entry], index) => ({ rank: index + 1, code, total: entry.total }))
}

beforeAll(async () => {
  ;[chains, database, redis] = await Promise.all([
    Promise.all([startTestChain({ chainId: 31337, seed: 1 }), startTestChain({ chainId: 31338, seed: 2 })]),
    createTestDatabase('analytics_truth'),
    createTestRedis(),
  ])
  truths = await Promise.all(chains.map((chain) => sendMixedTraffic(chain, { transactions: 72, blocks: 8 })))
  const heads = await Promise.all(chains.map(async (chain) => Number(await chain.client.getBlockNumber())))
  const indexer = await startTestIndexer({
    db: database.db,
    env: indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix }),
    chains: chains.map((chain) => chain.config),
  })
  try {
    await Promise.all(chains.map((chain, index) => waitForIndexed(database.db, chain.chainId, heads[index]!)))
  } finally {
    await indexer.stop()
  }
  api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: redis.url })
}, 300_000)

afterAll(async () => {
  await api?.close()
  await Promise.all((chains ?? []).map((chain) => chain.stop()))
  await redis?.cleanup()
  await database?.drop()
})

describe('analytics over the indexer’s totals', () => {
  it('gives every code the ground truth’s totals, per chain and summed', async () => {
    const all = expectedTotals(truths)
    const perChain = truths.map((truth) => expectedTotals([truth]))
    expect(all.size).toBeGreaterThan(5)
    const daily = await expectedDaily()
    for (const [code, expected] of all) {
      const response = await request(`${api.url}/v1/analytics/codes/${encodeURIComponent(code)}`)
      expect(response.status, code).toBe(200)
      expect(response.body.totals, code).toEqual(expected)
      const byChain = chains.flatMap((chain, index) => {
        const entry = perChain[index]!.get(code)
        return entry ? [{ chainId: chain.chainId, ...entry }] : []
      })
      expect(response.body.byChain, code).toEqual(byChain)
      const series = new Map<string, { transactions: number; userOperations: number }>(
        response.body.daily.map((point: { day: string; transactions: number; userOperations: number }) => [
          point.day,
          { transactions: point.transactions, userOperations: point.userOperations },
        ]),
      )
      for (const [day, point] of daily.get(code) ?? new Map()) expect(series.get(day), `${code} ${day}`).toEqual(point)
      const summed = response.body.daily.reduce(
        (sum: Expected, point: { transactions: number; userOperations: number }) => ({
          ...sum,
          transactions: sum.transactions + point.transactions,
          userOperations: sum.userOperations + point.userOperations,
        }),
        zero(),
      )
      expect([summed.transactions, summed.userOperations]).toEqual([expected.transactions, expected.userOperations])
    }
  })

  it('filters one chain', async () => {
    const chain = chains[1]!
    const expected = expectedTotals([truths[1]!])
    const [code, totals] = [...expected.entries()].find(([, entry]) => entry.total > 0)!
    const response = await request(`${api.url}/v1/analytics/codes/${encodeURIComponent(code)}?chainId=${chain.chainId}`)
    expect(response.body.totals).toEqual(totals)
    expect(response.body.byChain).toEqual([{ chainId: chain.chainId, ...totals }])
  })

  // the ground truth does not know registry namespaces: a code's entries (canonical and custom) summed must give its total
  type Entry = { rank: number; code: string; registry: string; total: number }
  const totalsOf = (entries: Entry[]) => {
    const byCode: Record<string, number> = {}
    for (const entry of entries) byCode[entry.code] = (byCode[entry.code] ?? 0) + entry.total
    return byCode
  }
  const isRanked = (entries: Entry[]) =>
    entries.every((entry, index) => entry.rank === index + 1 && (index === 0 || entries[index - 1]!.total >= entry.total))

  it('ranks the leaderboard as the ground truth does, for every window that holds today', async () => {
    const ranking = expectedRanking(expectedTotals(truths), 100)
    for (const window of ['24h', '7d', '30d', 'all']) {
      const response = await request(`${api.url}/v1/analytics/leaderboard?window=${window}&limit=100`)
      expect(response.status).toBe(200)
      expect(response.body.window).toBe(window)
      expect(totalsOf(response.body.entries), window).toEqual(Object.fromEntries(ranking.map((entry) => [entry.code, entry.total])))
      expect(isRanked(response.body.entries), window).toBe(true)
    }
  })

  it('ranks one chain and honours the limit', async () => {
    const chain = chains[0]!
    const ranking = expectedRanking(expectedTotals([truths[0]!]), 100)
    const all = await request(`${api.url}/v1/analytics/leaderboard?window=all&chainId=${chain.chainId}&limit=100`)
    expect(totalsOf(all.body.entries)).toEqual(Object.fromEntries(ranking.map((entry) => [entry.code, entry.total])))
    const response = await request(`${api.url}/v1/analytics/leaderboard?window=all&chainId=${chain.chainId}&limit=3`)
    expect(response.body.entries).toEqual(all.body.entries.slice(0, 3))
  })
})
