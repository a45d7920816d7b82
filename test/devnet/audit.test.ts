import { pino } from 'pino'
import { Writable } from 'node:stream'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startDevnetAudit } from '../../devnet/audit.js'
import type { GroundTruth } from '../../devnet/ledger.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { indexThrough } from '../support/indexer.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

/**
 * The devnet audit compares ground truth with what the API serves (the
 * analytics and leaderboard read paths): equal after an exact index, and a
 * mismatch logged as soon as a served total is off by one.
 */
let chain: TestChain
let database: TestDatabase
let redis: TestRedis
let truth: GroundTruth

beforeAll(async () => {
  ;[chain, database, redis] = await Promise.all([startTestChain(), createTestDatabase('devnet_audit'), createTestRedis()])
  truth = await sendMixedTraffic(chain, { transactions: 40, blocks: 4 })
  await indexThrough({ database, redis, chains: [chain.config], chainId: chain.chainId, head: Number(await chain.client.getBlockNumber()) })
}, 120_000)

afterAll(async () => {
  await chain?.stop()
  await database?.drop()
  await redis?.cleanup()
})

/** Runs one audit and returns the log lines it wrote. */
async function auditLines(): Promise<Array<{ msg: string; mismatches?: string[] }>> {
  const lines: string[] = []
  const logger = pino({ level: 'info' }, new Writable({ write: (chunk, _encoding, done) => done(void lines.push(String(chunk))) }))
  const audit = startDevnetAudit({ db: database.db, chainId: chain.chainId, truth: () => truth, logger })
  try {
    await audit.audit()
  } finally {
    audit.stop()
  }
  return lines.map((line) => JSON.parse(line) as { msg: string; mismatches?: string[] })
}

it('reports ground truth equal to what the analytics and leaderboard serve', async () => {
  expect(truth.attributions.length).toBeGreaterThan(10)
  expect((await auditLines()).map((line) => line.msg)).toEqual(['devnet ground truth equals the index'])
})

it('logs the mismatch when a served total is off by one, naming the code and the read path', async () => {
  const code = truth.attributions.find((row) => row.status === 'success' && row.kind === 'transaction')!.code
  // each read path off by one in the table it reads: the code's daily totals, and the leaderboard's all-time window
  await database.db.$client`
    update code_daily_totals set success_count = success_count + 1
    where code = ${code} and chain_id = ${chain.chainId} and kind = 'transaction'
      and day = (select min(day) from code_daily_totals where code = ${code} and chain_id = ${chain.chainId} and kind = 'transaction')`
  await database.db.$client`
    update code_window_totals set transactions = transactions + 1
    where window_name = 'all' and scope = ${chain.chainId} and code = ${code}
      and registry = (select min(registry) from code_window_totals where window_name = 'all' and scope = ${chain.chainId} and code = ${code})`
  const lines = await auditLines()
  expect(lines.map((line) => line.msg)).toEqual(['devnet ground truth differs from the index'])
  expect(lines[0]!.mismatches!.some((mismatch) => mismatch.startsWith(`${code}: sent`) && mismatch.includes('analytics serves'))).toBe(true)
  expect(lines[0]!.mismatches!.some((mismatch) => mismatch.startsWith(`${code}: sent`) && mismatch.includes('leaderboard serves'))).toBe(true)
})
