import { afterAll, beforeAll, expect, it } from 'vitest'
import { totalsByCode, type GroundTruth } from '../../devnet/ledger.js'
import { runRoles, type Running } from '../../src/bin/roles.js'
import { loadConfig } from '../../src/config/env.js'
import { createLogger } from '../../src/logger.js'
import { request } from '../support/api.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { indexerEnv, totalsFromIndex, waitForIndexed } from '../support/indexer.js'
import { chainsEnv } from '../support/processes.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

/**
 * One daemon indexing two chains at once: the commits of the second chain
 * switch the every-chain scope on while the first chain's commits run
 * (store/every-chain.ts). Each chain's totals match its ground truth, and
 * every figure a user reads for every chain together matches what the
 * attribution rows themselves say — the same senders on both chains count
 * once.
 */
let chains: TestChain[]
let truths: GroundTruth[]
let database: TestDatabase
let redis: TestRedis
let running: Running

beforeAll(async () => {
  ;[chains, database, redis] = await Promise.all([
    Promise.all([startTestChain({ chainId: 31337, seed: 1 }), startTestChain({ chainId: 31338, seed: 2 })]),
    createTestDatabase('two_chains'),
    createTestRedis(),
  ])
  truths = await Promise.all(chains.map((chain) => sendMixedTraffic(chain, { transactions: 100, blocks: 25 })))
  const heads = await Promise.all(chains.map(async (chain) => Number(await chain.client.getBlockNumber())))
  const config = loadConfig({
    ...indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix }),
    CHAINS: chainsEnv(chains.map((chain) => chain.config)),
    PORT: '0',
  })
  running = await runRoles(config, new Set(['api', 'follower', 'worker']), createLogger({ level: 'silent' }))
  await Promise.all(chains.map((chain, i) => waitForIndexed(database.db, chain.chainId, heads[i]!)))
}, 180_000)

afterAll(async () => {
  await running?.stop()
  await Promise.all((chains ?? []).map((chain) => chain.stop()))
  await database?.drop()
  await redis?.cleanup()
})

it('indexes each chain exactly and keeps the every-chain scope', async () => {
  for (const [i, chain] of chains.entries()) expect(await totalsFromIndex(database.db, chain.chainId)).toEqual(totalsByCode(truths[i]!))
  expect(await database.db.$client`select kept from every_chain_scope`).toEqual([{ kept: true }])
})

it('reads every chain together as the attribution rows say, a sender on both chains counted once', async () => {
  const sql = database.db.$client
  const rows = await sql<{ code: string; total: number; reverted: number; senders: number; chains: number }[]>`
    select code, count(*) filter (where status = 'success')::int as total, count(*) filter (where status = 'reverted')::int as reverted,
      count(distinct sender)::int as senders, count(distinct chain_id)::int as chains
    from attributions where code_status <> 'custom' group by code order by code`
  expect(rows.some((row) => row.chains === 2)).toBe(true)
  for (const row of rows) {
    const body = (await request(`${running.url}/v1/analytics/codes/${encodeURIComponent(row.code)}?registry=canonical`)).body
    expect([row.code, body.totals.total, body.totals.reverted, body.uniqueSenders]).toEqual([row.code, row.total, row.reverted, row.senders])
  }
  const [all] = await sql<{ attributions: number; senders: number }[]>`select count(*)::int as attributions, count(distinct sender)::int as senders from attributions`
  const summary = (await request(`${running.url}/v1/analytics/summary?window=all`)).body.totals
  expect([summary.attributions, summary.uniqueSenders]).toEqual([all!.attributions, all!.senders])
})
