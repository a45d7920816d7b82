import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { addDays, dayOf } from '../../src/store/buckets.js'
import { builderCodes, codeDailyTotals, codeHourlyTotals } from '../../src/db/schema/index.js'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'

/**
 * Analytics read from the aggregate tables only; these tests seed those
 * tables directly to pin the query semantics (windows, zero-filling, ties).
 * That the indexer fills them with the right numbers is covered by
 * indexer-ground-truth.test.ts.
 */
let database: TestDatabase
let api: TestApi

const today = dayOf(new Date())
const HOUR_MS = 3_600_000
const currentHour = () => new Date(Math.floor(Date.now() / HOUR_MS) * HOUR_MS)

type Kind = 'transaction' | 'userOperation'
type DailySeed = { code: string; chainId: number; day: string; kind: Kind; success: number; reverted?: number; gas?: number }
type HourlySeed = { code: string; chainId: number; hour: Date; kind: Kind; success: number; reverted?: number; gas?: number }

async function seedDaily(rows: DailySeed[]) {
  await database.db.insert(codeDailyTotals).values(
    rows.map((row) => ({
      code: row.code,
      chainId: row.chainId,
      day: row.day,
      kind: row.kind,
      successCount: row.success,
      revertedCount: row.reverted ?? 0,
      suffixGas: row.gas ?? 0,
    })),
  )
}

async function seedHourly(rows: HourlySeed[]) {
  await database.db.insert(codeHourlyTotals).values(
    rows.map((row) => ({
      code: row.code,
      chainId: row.chainId,
      hour: row.hour,
      kind: row.kind,
      successCount: row.success,
      revertedCount: row.reverted ?? 0,
      suffixGas: row.gas ?? 0,
    })),
  )
}

const codeUrl = (code: string, query = '') => `${api.url}/v1/analytics/codes/${encodeURIComponent(code)}${query}`
const leaderboardUrl = (query = '') => `${api.url}/v1/analytics/leaderboard${query}`

beforeAll(async () => {
  database = await createTestDatabase('analytics')
  // the seeds stand for commits of two chains, which keep the every-chain scope
  await database.db.$client`update every_chain_scope set kept = true`
  await database.db.insert(builderCodes).values({ code: 'bc_alpha001', walletAddress: '0x000000000000000000000000000000000000dEaD' })
  await seedDaily([
    // bc_alpha001 on two chains, three days of the window plus one day before it
    { code: 'bc_alpha001', chainId: 1, day: '2025-03-01', kind: 'transaction', success: 5, reverted: 1, gas: 500 },
    { code: 'bc_alpha001', chainId: 1, day: '2025-03-01', kind: 'userOperation', success: 2, reverted: 2, gas: 300 },
    { code: 'bc_alpha001', chainId: 8453, day: '2025-03-01', kind: 'transaction', success: 3, gas: 120 },
    { code: 'bc_alpha001', chainId: 8453, day: '2025-03-03', kind: 'userOperation', success: 7, reverted: 1, gas: 700 },
    { code: 'bc_alpha001', chainId: 1, day: '2025-03-05', kind: 'transaction', success: 1, gas: 80 },
    { code: 'bc_alpha001', chainId: 1, day: '2025-02-27', kind: 'transaction', success: 100, gas: 9999 },
    // leaderboard material relative to today
    { code: 'lb_recent', chainId: 1, day: addDays(today, -3), kind: 'transaction', success: 4 },
    { code: 'lb_recent', chainId: 10, day: addDays(today, -2), kind: 'userOperation', success: 3 },
    { code: 'lb_month', chainId: 1, day: addDays(today, -10), kind: 'transaction', success: 50 },
    { code: 'lb_old', chainId: 1, day: addDays(today, -100), kind: 'transaction', success: 1000 },
    { code: 'lb_tie_b', chainId: 1, day: today, kind: 'transaction', success: 6 },
    { code: 'lb_tie_a', chainId: 1, day: today, kind: 'userOperation', success: 6 },
    { code: 'lb_reverted', chainId: 1, day: today, kind: 'transaction', success: 0, reverted: 40 },
  ])
  await seedHourly([
    { code: 'lb_hour', chainId: 1, hour: new Date(currentHour().getTime() - HOUR_MS), kind: 'transaction', success: 2 },
    { code: 'lb_hour', chainId: 10, hour: currentHour(), kind: 'userOperation', success: 1 },
    { code: 'lb_yesterday', chainId: 1, hour: new Date(currentHour().getTime() - 30 * HOUR_MS), kind: 'transaction', success: 90 },
    { code: 'lb_hour_reverted', chainId: 1, hour: currentHour(), kind: 'transaction', success: 0, reverted: 9 },
  ])
  // started after the seeding: the totals went in behind the commit statement's back, and the API builds
  // its rolling windows from what is there when it starts (as after an upgrade)
  api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: inject('redisUrl') })
})

afterAll(async () => {
  await api?.close()
  await database?.drop()
})

describe('GET /v1/analytics/codes/:code', () => {
  it('sums both chains over the window and zero-fills the days between', async () => {
    const response = await request(codeUrl('bc_alpha001', '?from=2025-03-01&to=2025-03-06'))
    expect(response.status).toBe(200)
    expect(response.body).toEqual({
      code: 'bc_alpha001',
      registered: true,
      totals: { transactions: 9, userOperations: 9, total: 18, reverted: 4, suffixGas: 1700 },
      // senders are seeded in aggregates.test.ts, which writes them through the real commit
      uniqueSenders: 0,
      byChain: [
        { chainId: 1, transactions: 6, userOperations: 2, total: 8, reverted: 3, suffixGas: 880 },
        { chainId: 8453, transactions: 3, userOperations: 7, total: 10, reverted: 1, suffixGas: 820 },
      ],
      daily: [
        { day: '2025-03-01', transactions: 8, userOperations: 2, uniqueSenders: 0 },
        { day: '2025-03-02', transactions: 0, userOperations: 0, uniqueSenders: 0 },
        { day: '2025-03-03', transactions: 0, userOperations: 7, uniqueSenders: 0 },
        { day: '2025-03-04', transactions: 0, userOperations: 0, uniqueSenders: 0 },
        { day: '2025-03-05', transactions: 1, userOperations: 0, uniqueSenders: 0 },
        { day: '2025-03-06', transactions: 0, userOperations: 0, uniqueSenders: 0 },
      ],
      from: '2025-03-01',
      to: '2025-03-06',
    })
  })

  it('filters by chain', async () => {
    const response = await request(codeUrl('bc_alpha001', '?from=2025-03-01&to=2025-03-03&chainId=8453'))
    expect(response.status).toBe(200)
    expect(response.body.totals).toEqual({ transactions: 3, userOperations: 7, total: 10, reverted: 1, suffixGas: 820 })
    expect(response.body.byChain.map((chain: { chainId: number }) => chain.chainId)).toEqual([8453])
    expect(response.body.daily).toEqual([
      { day: '2025-03-01', transactions: 3, userOperations: 0, uniqueSenders: 0 },
      { day: '2025-03-02', transactions: 0, userOperations: 0, uniqueSenders: 0 },
      { day: '2025-03-03', transactions: 0, userOperations: 7, uniqueSenders: 0 },
    ])
  })

  it('defaults to the last 30 days ending today', async () => {
    const response = await request(codeUrl('lb_recent'))
    expect(response.status).toBe(200)
    expect(response.body.to).toBe(today)
    expect(response.body.from).toBe(addDays(today, -29))
    expect(response.body.daily).toHaveLength(30)
    expect(response.body.daily.at(-1).day).toBe(today)
    expect(response.body.totals).toMatchObject({ transactions: 4, userOperations: 3, total: 7 })
    expect(response.body.registered).toBe(false)
  })

  it('answers zeros, not 404, for a code with no activity', async () => {
    const response = await request(codeUrl('nobody_here', '?from=2025-01-01&to=2025-01-02'))
    expect(response.status).toBe(200)
    expect(response.body.totals).toEqual({ transactions: 0, userOperations: 0, total: 0, reverted: 0, suffixGas: 0 })
    expect(response.body.byChain).toEqual([])
    expect(response.body.daily).toHaveLength(2)
  })

  it('accepts a window of exactly 366 days', async () => {
    const response = await request(codeUrl('bc_alpha001', '?from=2024-03-06&to=2025-03-06'))
    expect(response.status).toBe(200)
    expect(response.body.daily).toHaveLength(366)
    expect(response.body.totals.transactions).toBe(109)
  })

  const badQueries: Array<[string, string, string]> = [
    ['a month 13', '?from=2025-13-01&to=2025-12-31', 'from'],
    ['February 30', '?from=2025-02-30', 'from'],
    ['a word for a date', '?to=yesterday', 'to'],
    ['a timestamp for a date', '?from=2025-03-01T00:00:00Z', 'from'],
    ['from after to', '?from=2025-03-05&to=2025-03-01', 'from'],
    ['a window over 366 days', '?from=2020-01-01&to=2025-01-01', 'from'],
    ['a non-numeric chainId', '?chainId=mainnet', 'chainId'],
    ['a zero chainId', '?chainId=0', 'chainId'],
    ['a fractional chainId', '?chainId=1.5', 'chainId'],
  ]
  for (const [name, query, field] of badQueries) {
    it(`400 naming ${field} for ${name}`, async () => {
      const response = await request(codeUrl('bc_alpha001', query))
      expect(response.status).toBe(400)
      expect(response.body).toMatchObject({ success: false, error: { code: 'invalid_request', field } })
      expect(response.body.error.message).toMatch(new RegExp(`^${field}: `))
      expect(response.headers.get('cache-control')).toBe('no-store')
    })
  }

  it('accepts codes up to 500 characters (suffix codes can be long) and refuses longer ones naming code', async () => {
    expect((await request(codeUrl('x'.repeat(500)))).status).toBe(200)
    const response = await request(codeUrl('x'.repeat(501)))
    expect(response.status).toBe(400)
    expect(response.body.error.field).toBe('code')
  })
})

describe('OpenAPI', () => {
  it('documents the analytics and validation routes', async () => {
    const spec = await request(`${api.url}/openapi.json`)
    expect(spec.status).toBe(200)
    expect(Object.keys(spec.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/analytics/codes/{code}',
        '/v1/analytics/codes/{code}/hourly',
        '/v1/analytics/codes/{code}/attributions',
        '/v1/analytics/leaderboard',
        '/v1/analytics/summary',
        '/v1/indexer/status',
        '/v1/attribution/stream',
        '/v1/attribution/validate',
      ]),
    )
    expect(Object.keys(spec.body.paths['/v1/attribution/validate'])).toEqual(expect.arrayContaining(['get', 'post']))
  })

  it('answers validation with 400 naming chainId when no chain is configured', async () => {
    const response = await request(`${api.url}/v1/attribution/validate?type=transaction&hash=0x${'ab'.repeat(32)}`)
    expect(response.status).toBe(400)
    expect(response.body.error.field).toBe('chainId')
  })

  it('answers a POST without a body with 400', async () => {
    const response = await fetch(`${api.url}/v1/attribution/validate`, { method: 'POST' })
    expect(response.status).toBe(400)
  })
})

describe('caching headers', () => {
  it('sends an ETag and max-age, and 304 for a matching If-None-Match', async () => {
    const url = codeUrl('bc_alpha001', '?from=2025-03-01&to=2025-03-06')
    const first = await request(url)
    const etag = first.headers.get('etag')
    expect(etag).toMatch(/^W\/".+"$/)
    expect(first.headers.get('cache-control')).toMatch(/max-age=\d+/)

    const repeat = await fetch(url, { headers: { 'if-none-match': etag! } })
    expect(repeat.status).toBe(304)
    expect(await repeat.text()).toBe('')
    expect(repeat.headers.get('etag')).toBe(etag)

    const other = await fetch(url, { headers: { 'if-none-match': 'W/"something-else"' } })
    expect(other.status).toBe(200)
  })

  it('changes the ETag when the totals change', async () => {
    const url = codeUrl('etag_code', '?from=2025-04-01&to=2025-04-02')
    const before = await request(url)
    await seedDaily([{ code: 'etag_code', chainId: 1, day: '2025-04-02', kind: 'transaction', success: 1 }])
    const after = await fetch(url, { headers: { 'if-none-match': before.headers.get('etag')! } })
    expect(after.status).toBe(200)
    expect(((await after.json()) as { totals: { total: number } }).totals.total).toBe(1)
  })

  it('caches leaderboards the same way', async () => {
    const first = await request(leaderboardUrl('?window=all'))
    const repeat = await fetch(leaderboardUrl('?window=all'), { headers: { 'if-none-match': first.headers.get('etag')! } })
    expect(repeat.status).toBe(304)
  })
})

describe('GET /v1/analytics/leaderboard', () => {
  const codesOf = (body: { entries: Array<{ code: string }> }) => body.entries.map((entry) => entry.code)
  /** The ranking columns; the other columns are pinned in aggregates.test.ts. */
  const ranking = (entries: Array<{ rank: number; code: string; total: number }>) => entries.map(({ rank, code, total }) => ({ rank, code, total }))

  it('ranks the last 7 days, ties ordered by code, reverted-only codes left out', async () => {
    const response = await request(leaderboardUrl('?window=7d'))
    expect(response.status).toBe(200)
    expect({ window: response.body.window, entries: ranking(response.body.entries) }).toEqual({
      window: '7d',
      entries: [
        { rank: 1, code: 'lb_recent', total: 7 },
        { rank: 2, code: 'lb_tie_a', total: 6 },
        { rank: 3, code: 'lb_tie_b', total: 6 },
      ],
    })
  })

  it('widens to 30 days and to everything', async () => {
    expect(codesOf((await request(leaderboardUrl('?window=30d'))).body)).toEqual(['lb_month', 'lb_recent', 'lb_tie_a', 'lb_tie_b'])
    const all = (await request(leaderboardUrl('?window=all'))).body
    expect(codesOf(all).slice(0, 3)).toEqual(['lb_old', 'bc_alpha001', 'lb_month'])
    expect(all.entries[1]).toMatchObject({ rank: 2, code: 'bc_alpha001', total: 118, walletAddress: '0x000000000000000000000000000000000000dEaD' })
    expect(codesOf(all)).not.toContain('lb_reverted')
  })

  it('uses hourly buckets for the rolling 24 hours', async () => {
    const response = await request(leaderboardUrl('?window=24h'))
    expect(ranking(response.body.entries)).toEqual([{ rank: 1, code: 'lb_hour', total: 3 }])
  })

  it('filters by chain', async () => {
    expect(ranking((await request(leaderboardUrl('?window=7d&chainId=10'))).body.entries)).toEqual([{ rank: 1, code: 'lb_recent', total: 3 }])
    expect(ranking((await request(leaderboardUrl('?window=24h&chainId=10'))).body.entries)).toEqual([{ rank: 1, code: 'lb_hour', total: 1 }])
  })

  it('applies the limit after ordering', async () => {
    const response = await request(leaderboardUrl('?window=30d&limit=2'))
    expect(codesOf(response.body)).toEqual(['lb_month', 'lb_recent'])
  })

  it('defaults to 7 days', async () => {
    expect((await request(leaderboardUrl())).body.window).toBe('7d')
  })

  const badQueries: Array<[string, string, string]> = [
    ['an unknown window', '?window=1y', 'window'],
    ['limit 0', '?limit=0', 'limit'],
    ['limit 101', '?limit=101', 'limit'],
    ['a non-numeric limit', '?limit=ten', 'limit'],
    ['a negative chainId', '?chainId=-1', 'chainId'],
    ['an unknown include', '?include=everything', 'include'],
    ['an unknown format', '?format=xml', 'format'],
  ]
  for (const [name, query, field] of badQueries) {
    it(`400 naming ${field} for ${name}`, async () => {
      const response = await request(leaderboardUrl(query))
      expect(response.status).toBe(400)
      expect(response.body.error.field).toBe(field)
      expect(response.body.error.message).toMatch(new RegExp(`^${field}: `))
    })
  }
})
