import { afterAll, beforeAll, expect, it } from 'vitest'
import { totalsByCode, type GroundTruth } from '../../devnet/ledger.js'
import { loadConfig } from '../../src/config/env.js'
import { createLogger } from '../../src/logger.js'
import { runRoles, type Running } from '../../src/bin/roles.js'
import { startTestChain, sendMixedTraffic, type TestChain } from '../support/chain.js'
import { indexerEnv, waitForIndexed } from '../support/indexer.js'
import { chainsEnv } from '../support/processes.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { request } from '../support/api.js'

let chain: TestChain
let database: TestDatabase
let redis: TestRedis
let running: Running
let truth: GroundTruth
let head: number

beforeAll(async () => {
  ;[chain, database, redis] = await Promise.all([startTestChain(), createTestDatabase('allinone'), createTestRedis()])
  truth = await sendMixedTraffic(chain, { transactions: 120, blocks: 30 })
  head = Number(await chain.client.getBlockNumber())
  const config = loadConfig({
    ...indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix }),
    CHAINS: chainsEnv([chain.config]),
    PORT: '0',
  })
  running = await runRoles(config, new Set(['api', 'follower', 'worker']), createLogger({ level: 'silent' }))
  await waitForIndexed(database.db, chain.chainId, head)
}, 120_000)

afterAll(async () => {
  await running?.stop()
  await chain?.stop()
  await database?.drop()
  await redis?.cleanup()
})

it('one process serves the analytics of what it indexed', async () => {
  const expected = totalsByCode(truth)
  for (const [code, totals] of Object.entries(expected).slice(0, 5)) {
    const response = await request(`${running.url}/v1/analytics/codes/${encodeURIComponent(code)}?chainId=${chain.chainId}`)
    expect(response.status).toBe(200)
    expect(response.body.totals).toMatchObject({
      transactions: totals.transactions,
      userOperations: totals.userOperations,
      reverted: totals.reverted,
      total: totals.transactions + totals.userOperations,
    })
  }
})

it('exposes head, indexed block, lag, queue depth and pipeline counters at /metrics', async () => {
  const response = await fetch(`${running.url}/metrics`)
  expect(response.status).toBe(200)
  const text = await response.text()
  const label = `{chain_id="${chain.chainId}"}`
  expect(text).toContain(`indexer_head_block${label} ${head}`)
  expect(text).toContain(`indexer_indexed_block${label} ${head}`)
  expect(text).toContain(`indexer_lag_blocks${label} 0`)
  expect(text).toMatch(/indexer_queue_jobs\{state="waiting"\} \d+/)
  expect(text).toMatch(new RegExp(`indexer_transactions_scanned_total\\{chain_id="${chain.chainId}"\\} [1-9]`))
  expect(text).toMatch(/indexer_attributions_total\{chain_id="\d+",kind="userOperation"\} [1-9]/)
  expect(text).toContain('process_resident_memory_bytes')
})
