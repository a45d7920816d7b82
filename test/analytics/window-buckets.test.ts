import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readLeaderboard } from '../../src/analytics/leaderboard.js'
import { codeDailyTotals, codeHourlyTotals } from '../../src/db/schema/index.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'
import { createRollingWindows } from '../../src/store/rolling-windows.js'

/**
 * Which totals a rolling window reads must not depend on the time of day.
 * The daily and hourly tables are seeded to disagree on purpose (the hourly
 * one alone holds `by_hour`, the daily one alone `by_day`), so each answer
 * shows which table was read. Between 23:00 and 23:59 UTC the rolling 24
 * hours start at midnight; they once read the daily totals then.
 */
let database: TestDatabase
const LATE_EVENING = new Date('2026-03-10T23:30:00Z')

beforeAll(async () => {
  database = await createTestDatabase('buckets')
  // the seeds stand for commits of chain 1: the only chain, whose rows are every chain's
  await database.db.$client`update every_chain_scope set only_chain = 1`
  const totals = { kind: 'transaction' as const, revertedCount: 0, suffixGas: 0 }
  await database.db.insert(codeHourlyTotals).values({ ...totals, code: 'by_hour', chainId: 1, hour: new Date('2026-03-10T05:00:00Z'), successCount: 2 })
  await database.db.insert(codeDailyTotals).values({ ...totals, code: 'by_day', chainId: 1, day: '2026-03-10', successCount: 5 })
})

afterAll(async () => {
  await database?.drop()
})

describe('rolling window buckets', () => {
  it('the 24 hours read hourly totals, also when they start at midnight', async () => {
    const board = await readLeaderboard(createRollingWindows(database.db.$client), { window: '24h', limit: 10, now: LATE_EVENING })
    expect(board.entries.map(({ code, total }) => ({ code, total }))).toEqual([{ code: 'by_hour', total: 2 }])
  })

  it('the 7 days read daily totals', async () => {
    const board = await readLeaderboard(createRollingWindows(database.db.$client), { window: '7d', limit: 10, now: LATE_EVENING })
    expect(board.entries.map(({ code, total }) => ({ code, total }))).toEqual([{ code: 'by_day', total: 5 }])
  })
})
