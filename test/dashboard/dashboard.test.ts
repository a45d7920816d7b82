import { mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GroundTruth } from '../../src/devnet/ledger.js'
import { createRegistry } from '../../src/registry/register.js'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { locateChromium } from '../support/browser.js'
import { indexThrough } from '../support/indexer.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

/**
 * The dashboard in headless Chromium over a database the real indexer
 * filled from anvil traffic: the numbers on the page must be the API's, the
 * chart must be drawn, validation must show the decoded result, and the page
 * must not reach for anything but this service.
 */
const OUTPUT_DIR = fileURLToPath(new URL('../../test-output/', import.meta.url))
export const SCREENSHOT = `${OUTPUT_DIR}dashboard.png`

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

let chain: TestChain
let database: TestDatabase
let redis: TestRedis
let api: TestApi
let truth: GroundTruth
let browser: Browser
let page: Page
const foreignRequests: string[] = []
const pageErrors: string[] = []

beforeAll(async () => {
  ;[chain, database, redis] = await Promise.all([startTestChain(), createTestDatabase('dashboard'), createTestRedis()])
  const registry = createRegistry({ db: database.db })
  const codes = []
  for (const wallet of chain.wallets.traffic) codes.push((await registry.register(wallet.address)).builderCode)
  truth = await sendMixedTraffic(chain, { transactions: 72, blocks: 8, registeredCodes: codes })
  const head = Number(await chain.client.getBlockNumber())
  await indexThrough({ database, redis, chains: [chain.config], chainId: chain.chainId, head })
  api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: redis.url, env: { RPC_URL: chain.rpcUrl } })

  browser = await chromium.launch({ executablePath: locateChromium(), args: CHROMIUM_ARGS })
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
  const origin = new URL(api.url).origin
  // anything but this service is refused and remembered: the page must work offline
  await page.route('**/*', (route) => {
    const url = route.request().url()
    if (url.startsWith(origin)) return route.continue()
    foreignRequests.push(url)
    return route.abort()
  })
  page.on('pageerror', (error) => pageErrors.push(error.message))
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(message.text())
  })
}, 240_000)

afterAll(async () => {
  await browser?.close()
  await api?.close()
  await chain?.stop()
  await redis?.cleanup()
  await database?.drop()
})

const numberIn = async (selector: string) => Number(await page.locator(selector).getAttribute('data-value'))

describe('dashboard page', () => {
  it('serves the page and its assets from the API, uPlot included', async () => {
    const html = await request(`${api.url}/dashboard`)
    expect(html.status).toBe(200)
    expect(html.headers.get('content-type')).toMatch(/text\/html/)
    expect(html.headers.get('content-security-policy')).toMatch(/default-src 'self'/)
    for (const asset of ['dashboard.js', 'dashboard.css', 'uPlot.esm.js', 'uPlot.min.css']) {
      const response = await fetch(`${api.url}/dashboard/assets/${asset}`)
      expect(response.status, asset).toBe(200)
      const etag = response.headers.get('etag')!
      expect((await fetch(`${api.url}/dashboard/assets/${asset}`, { headers: { 'if-none-match': etag } })).status).toBe(304)
    }
    expect((await request(`${api.url}/dashboard/assets/..%2Fpackage.json`)).status).toBe(404)
  })

  it('shows the leaderboard the API returns', async () => {
    await page.goto(`${api.url}/dashboard`)
    const api7d = await request(`${api.url}/v1/analytics/leaderboard?window=7d&limit=20`)
    expect(api7d.body.entries.length).toBeGreaterThan(3)
    const rows = page.locator('#leaderboard tbody tr')
    await expect.poll(() => rows.count()).toBe(api7d.body.entries.length)
    const shown = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)))
    expect(shown).toEqual(api7d.body.entries.map((entry: { rank: number; code: string; total: number }) => [String(entry.rank), entry.code, entry.total.toLocaleString('en-US')]))
  })

  it('searches a code and shows the API’s totals and a uPlot chart of its daily series', async () => {
    // the busiest code with both kinds of activity, so the chart has two lines to draw
    const leaderboard = await request(`${api.url}/v1/analytics/leaderboard?window=all&limit=100`)
    let code = ''
    let fromApi: Awaited<ReturnType<typeof request>> | undefined
    for (const entry of leaderboard.body.entries as Array<{ code: string }>) {
      fromApi = await request(`${api.url}/v1/analytics/codes/${encodeURIComponent(entry.code)}`)
      code = entry.code
      if (fromApi.body.totals.transactions > 0 && fromApi.body.totals.userOperations > 0) break
    }
    expect(fromApi!.body.totals.userOperations).toBeGreaterThan(0)

    await page.fill('#code-input', code)
    await page.click('#search-button')
    await page.locator('#code-result').waitFor({ state: 'visible' })
    await expect.poll(() => page.locator('#code-name').textContent()).toBe(code)
    for (const key of ['total', 'transactions', 'userOperations', 'reverted', 'suffixGas']) {
      expect(await numberIn(`#total-${key}`), key).toBe(fromApi!.body.totals[key])
    }
    const chainRows = await page.locator('#by-chain tbody tr td:first-child').allTextContents()
    expect(chainRows).toEqual(fromApi!.body.byChain.map((entry: { chainId: number }) => String(entry.chainId)))

    // uPlot draws onto a canvas and writes its legend: both series are there, with the API's daily points
    await page.locator('#chart .uplot canvas').waitFor()
    const legend = await page.locator('#chart .u-legend').textContent()
    expect(legend).toContain('Transactions')
    expect(legend).toContain('UserOperations')
    const plotted = await page.locator('#chart .uplot canvas').evaluate((canvas) => (canvas as unknown as { width: number }).width)
    expect(plotted).toBeGreaterThan(100)
  })

  it('runs the validation form and shows the decoded result', async () => {
    const attributed = truth.attributions.find((row) => row.kind === 'userOperation' && row.userOpHash && row.status === 'success')!
    const fromApi = await request(`${api.url}/v1/attribution/validate?type=userOperation&hash=${attributed.userOpHash}`)
    expect(fromApi.status).toBe(200)

    await page.selectOption('#validate-type', 'userOperation')
    await page.fill('#validate-hash', attributed.userOpHash!)
    await page.click('#validate-button')
    await page.locator('#validate-result').waitFor({ state: 'visible' })
    const summary = await page.locator('#validate-summary').textContent()
    expect(summary).toMatch(/^Attributed/)
    expect(summary).toContain(`block ${fromApi.body.blockNumber}`)
    expect(summary).toContain(`from the ${fromApi.body.source}`)
    const codes = await page.locator('#validate-codes tbody tr td:first-child').allTextContents()
    expect(codes).toEqual(fromApi.body.codes.map((entry: { code: string }) => entry.code))
    expect(JSON.parse((await page.locator('#validate-json').textContent())!)).toEqual(fromApi.body)

    await mkdir(OUTPUT_DIR, { recursive: true })
    await page.screenshot({ path: SCREENSHOT, fullPage: true })
  })

  it('shows the API’s error message when validation fails', async () => {
    const unknown = `0x${'12'.repeat(32)}`
    const fromApi = await request(`${api.url}/v1/attribution/validate?type=transaction&hash=${unknown}`)
    expect(fromApi.status).toBe(404)
    await page.selectOption('#validate-type', 'transaction')
    await page.fill('#validate-hash', unknown)
    await page.click('#validate-button')
    await expect.poll(() => page.locator('#error').textContent()).toBe(`Validation: ${fromApi.body.error.message}`)
    expect(await page.locator('#error').isVisible()).toBe(true)
  })

  it('loaded nothing from outside the service and raised no script errors', () => {
    expect(foreignRequests).toEqual([])
    // the 404 above is logged by Chromium as a failed resource load; anything else is a bug
    expect(pageErrors.filter((message) => !/status of 404/.test(message))).toEqual([])
  })
})
