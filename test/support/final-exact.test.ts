import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { commitFinalRanges } from '../../src/store/bulk-commit.js'
import { expectAggregatesMatchRows, readyRollingWindows } from './final-exact.js'
import { cutAndCommit, cutRange, senderAddress, type TestAttribution } from './ranges.js'
import { createTestDatabase, type TestDatabase } from './services.js'

/**
 * The exactness check the finality tests lean on can fail: over an index of
 * final rows and tip rows sharing codes, senders and the day, it passes;
 * then each aggregate a read serves is put off by one — a sender counted
 * twice in a day, in a window, a window's total, a chain's sender missing —
 * and it fails, naming what.
 */
let database: TestDatabase
const CHAIN = 7
const NOW_S = Math.floor(Date.now() / 1000)

const items = (from: number, count: number, seed: number): TestAttribution[] =>
  Array.from({ length: count }, (_, i) => ({
    tx: `t${seed}-${i}`,
    code: ['alpha', 'beta'][i % 2]!,
    sender: senderAddress(1 + ((i * seed) % 4)),
    timestamp: NOW_S - 600 + i,
    block: from + (i % 5),
    kind: i % 3 === 0 ? 'userOperation' : 'transaction',
    userOpIndex: 0,
  }))

beforeAll(async () => {
  database = await createTestDatabase('final_exact')
  await readyRollingWindows(database.db)
  const final = await cutRange(database.db, { chainId: CHAIN, fromBlock: 1, toBlock: 5, branch: 'a', items: items(1, 12, 3) })
  expect(await commitFinalRanges(database.db, [{ ...final, final: true }])).toEqual([{ committed: true, inserted: 12 }])
  expect(await cutAndCommit(database.db, { chainId: CHAIN, fromBlock: 6, toBlock: 10, branch: 'a', items: items(6, 10, 5) })).toEqual({ committed: true, inserted: 10 })
})

afterAll(async () => {
  await database?.drop()
})

describe('expectAggregatesMatchRows', () => {
  it('passes over final and tip rows that share members', async () => {
    await expectAggregatesMatchRows(database.db, [CHAIN])
  })

  const offByOne: Array<[what: string, change: string, undo: string]> = [
    [
      'a sender counted twice in a code’s day',
      `update code_daily_sender_counts set senders = senders + 1 where (code, registry, chain_id, day) = (select code, registry, chain_id, day from code_daily_sender_counts order by 1, 2, 3, 4 limit 1)`,
      `update code_daily_sender_counts set senders = senders - 1 where (code, registry, chain_id, day) = (select code, registry, chain_id, day from code_daily_sender_counts order by 1, 2, 3, 4 limit 1)`,
    ],
    [
      'a sender counted twice in the 24 hours',
      `update sender_window_counts set senders = senders + 1 where window_name = 'senders:24h'`,
      `update sender_window_counts set senders = senders - 1 where window_name = 'senders:24h'`,
    ],
    [
      'a transaction counted twice in the 7 days',
      `update code_window_totals set transactions = transactions + 1 where window_name = '7d' and code = 'alpha'`,
      `update code_window_totals set transactions = transactions - 1 where window_name = '7d' and code = 'alpha'`,
    ],
    [
      'a chain’s sender of the day missing',
      `update chain_daily_senders set attributions = -attributions where sender = '${senderAddress(1)}'`,
      `update chain_daily_senders set attributions = -attributions where sender = '${senderAddress(1)}'`,
    ],
  ]
  for (const [what, change, undo] of offByOne) {
    it(`fails on ${what}`, async () => {
      const sql = database.db.$client
      expect((await sql.unsafe(change)).count).toBeGreaterThan(0)
      try {
        await expect(expectAggregatesMatchRows(database.db, [CHAIN])).rejects.toThrow()
      } finally {
        await sql.unsafe(undo)
      }
      await expectAggregatesMatchRows(database.db, [CHAIN])
    })
  }
})
