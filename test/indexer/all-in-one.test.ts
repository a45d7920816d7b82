import { afterAll, beforeAll, expect, it } from 'vitest'
import { totalsByCode, type GroundTruth } from '../../devnet/ledger.js'
import type { Running } from '../../src/bin/roles.js'
import { startAllInOne, type AllInOne } from '../support/all-in-one.js'
import type { TestChain } from '../support/chain.js'
import { request } from '../support/api.js'

let allInOne: AllInOne
let chain: TestChain
let running: Running
let truth: GroundTruth
let head: number

beforeAll(async () => {
  allInOne = await startAllInOne('allinone', { transactions: 120, blocks: 30 })
  ;({ chain, running, truth, head } = allInOne)
}, 120_000)

afterAll(async () => {
  await allInOne?.stop()
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
