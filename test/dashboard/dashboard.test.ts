import { mkdir } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GroundTruth } from '../../devnet/ledger.js'
import { commitRange } from '../../src/store/commit.js'
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
const EXPLORER = 'https://explorer.example'

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
/** The code the page shows after the search test. */
let shownCode = ''
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
  // a configured explorer: transaction hashes link out to it, UserOperation hashes to the validate panel
  api = await startTestApi({
    db: database.db,
    databaseUrl: database.url,
    redisUrl: redis.url,
    env: { RPC_URL: chain.rpcUrl },
    deps: { chains: [{ ...chain.config, explorerUrl: EXPLORER }] },
  })

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

/**
 * One attributed transaction of `code`, committed by the real commit
 * statement as a worker would run it, for a block far above the test chain's.
 */
async function commitOneAttribution(code: string, txHash: `0x${string}`, block: number, timeMs: number) {
  const job = { chainId: chain.chainId, fromBlock: block, toBlock: block, parentHash: `0x${'01'.repeat(32)}` as const, toHash: `0x${'02'.repeat(32)}` as const }
  await database.db.$client`insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash) values (${job.chainId}, ${block}, ${block}, ${job.parentHash}, ${job.toHash})`
  const attribution = { kind: 'attributed' as const, schemaId: 0 as const, codes: [code], entries: [{ code, role: 'service' as const, valid: true }], suffix: '0x00' as const, suffixBytes: 1, suffixGas: 4 }
  return commitRange(database.db, {
    job,
    blocks: [],
    txCount: 1,
    rows: [{
      code,
      record: {
        kind: 'transaction', txHash, txIndex: 0, blockNumber: block, blockHash: job.toHash, blockTimestamp: Math.floor(timeMs / 1000),
        userOpIndex: -1, userOpHash: undefined, sender: chain.wallets.traffic[0]!.address, target: null, status: 'success', actualGasCost: undefined,
        attribution: attribution as never,
      },
      resolution: { status: 'registered', wallet: null, registry: null },
    }],
    malformed: [],
  })
}

/** A chart's legend as numbers by series label (uPlot writes `1,234`; `--` would be NaN). */
async function legendOf(on: Page, chart: string) {
  const rows = await on.locator(`${chart} .u-legend .u-series`).evaluateAll((series) =>
    series.slice(1).map((row) => [row.querySelector('.u-label')?.textContent ?? '', row.querySelector('.u-value')?.textContent ?? '']),
  )
  return Object.fromEntries(rows.map(([label, value]) => [label, Number(value!.replace(/,/g, ''))]))
}

type Layout = {
  viewport: number
  cut: string[]
  scrolled: string[]
  truncated: string[]
  uneven: Array<[string, number, number]>
  wrappedTimes: number
  duplicateRows: string[]
  leaderboardRows: number
  legends: Record<string, string[]>
}

/**
 * What a reader would see as broken, measured in the page (its source is a
 * string: this project compiles without the DOM's types). An element is cut
 * off when the part of it that its clipping ancestors (a scroll box, an
 * ellipsis cell) let through reaches past the viewport; a scroll box that
 * scrolls sideways or a cell cut short hides part of a table.
 */
const LAYOUT_PROBE = `(() => {
  const viewport = document.documentElement.clientWidth
  const name = (el) => (el.id ? '#' + el.id : el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\\s+/).join('.') : '')) + ' in #' + (el.parentElement?.closest('[id]')?.id ?? 'page')
  const shown = (el) => {
    const style = getComputedStyle(el)
    const box = el.getBoundingClientRect()
    return style.visibility !== 'hidden' && style.display !== 'none' && box.width > 0 && box.height > 0
  }
  const cut = []
  for (const el of document.body.querySelectorAll('*')) {
    if (!shown(el)) continue
    let { left, right } = el.getBoundingClientRect()
    for (let parent = el.parentElement; parent && parent !== document.body; parent = parent.parentElement) {
      if (getComputedStyle(parent).overflowX === 'visible') continue
      const box = parent.getBoundingClientRect()
      left = Math.max(left, box.left)
      right = Math.min(right, box.right)
    }
    if (right - left < 1) continue
    if (left < -0.5 || right > viewport + 0.5) cut.push(name(el) + ' spans ' + Math.round(left) + '..' + Math.round(right))
  }
  const scrolled = [...document.querySelectorAll('.scroll')].filter((el) => shown(el) && el.scrollWidth > el.clientWidth + 1).map(name)
  const truncated = [...document.querySelectorAll('table.stack td')]
    .filter((td) => shown(td) && td.scrollWidth > td.clientWidth + 1)
    .map((td) => td.closest('table').id + ' row ' + td.parentElement.rowIndex + ' cell ' + (td.cellIndex + 1) + ': ' + td.textContent)
  const uneven = [...document.querySelectorAll('table.stack')].filter(shown).map((table) => {
    const heights = [...table.tBodies[0].rows].map((row) => Math.round(row.getBoundingClientRect().height))
    return [table.id, Math.min(...heights), Math.max(...heights)]
  }).filter(([, min, max]) => max - min > 1)
  const wrappedTimes = [...document.querySelectorAll('#attributions tbody td:first-child')].filter((td) => {
    const range = document.createRange()
    range.selectNodeContents(td)
    return range.getClientRects().length > 1
  }).length
  // the rank aside, two rows must not read the same (one code in two registries says which)
  const rows = [...document.querySelectorAll('#leaderboard tbody tr')].map((row) => [...row.cells].slice(1).map((td) => td.innerText).join(' | '))
  const duplicateRows = rows.filter((text, index) => rows.indexOf(text) !== index)
  const legends = Object.fromEntries(['summary-chart', 'chart'].map((id) => [id, [...document.querySelectorAll('#' + id + ' .u-legend .u-series')].map((row) => row.querySelector('.u-value')?.textContent ?? '')]))
  return { viewport, cut, scrolled, truncated, uneven, wrappedTimes, duplicateRows, leaderboardRows: rows.length, legends }
})()`

const layoutOf = async (on: Page) => (await on.evaluate(LAYOUT_PROBE)) as Layout

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

  it('opens the overview on the smallest window holding the index: 24 hours for traffic of the last minutes', async () => {
    await page.goto(`${api.url}/dashboard`)
    const all = await request(`${api.url}/v1/analytics/summary?window=all`)
    const day = await request(`${api.url}/v1/analytics/summary?window=24h`)
    expect(day.body.totals.attributions).toBe(all.body.totals.attributions)
    expect(await page.locator('#window-select').inputValue()).toBe('24h')
    await expect.poll(() => numberIn('#summary-attributions')).toBe(day.body.totals.attributions)
  })

  it('shows the leaderboard the API returns', async () => {
    const api24h = await request(`${api.url}/v1/analytics/leaderboard?window=24h&limit=20`)
    expect(api24h.body.entries.length).toBeGreaterThan(3)
    const rows = page.locator('#leaderboard tbody tr')
    await expect.poll(() => rows.count()).toBe(api24h.body.entries.length)
    // a registry cell shows its whole name on hover (a custom registry's address is shortened in the cell)
    const shown = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td, i) => (i === 8 && td.title) || td.textContent)))
    type Entry = { rank: number; code: string; total: number; transactions: number; userOperations: number; reverted: number; registry: string }
    expect(shown.map((cells) => [...cells.slice(0, 6), cells[8]])).toEqual(
      api24h.body.entries.map((entry: Entry) => [
        String(entry.rank), entry.code, ...[entry.total, entry.transactions, entry.userOperations, entry.reverted].map((n) => n.toLocaleString('en-US')), entry.registry,
      ]),
    )
    const custom = api24h.body.entries.find((entry: Entry) => entry.registry !== 'canonical')
    expect(custom).toBeDefined()
    const [chainId, address] = custom.registry.split(':')
    expect(shown[custom.rank - 1]![8]).toBe(custom.registry)
    expect(await rows.nth(custom.rank - 1).locator('td').nth(8).textContent()).toBe(`${chainId}:${address.slice(0, 6)}…${address.slice(-4)}`)
  })

  it('shows the indexer status and the summary the API returns', async () => {
    const status = await request(`${api.url}/v1/indexer/status`)
    const chainStatus = status.body.chains.find((entry: { chainId: number }) => entry.chainId === chain.chainId)
    const badge = page.locator(`#status .chain[data-chain-id="${chain.chainId}"]`)
    await badge.waitFor()
    const text = await badge.textContent()
    expect(text).toContain(`head ${chainStatus.headBlock.toLocaleString('en-US')}`)
    expect(text).toContain(`indexed ${chainStatus.indexedBlock.toLocaleString('en-US')}`)
    expect(text).toContain(`${chainStatus.rangesPending} pending · ${chainStatus.rangesStuck} stuck`)
    // each RPC endpoint the fetching processes published, by host (the status already redacts the URL)
    for (const endpoint of chainStatus.endpoints ?? []) expect(text).toContain(new URL(endpoint.url).host)

    const summary = await request(`${api.url}/v1/analytics/summary?window=24h`)
    expect(summary.body.totals.attributions).toBe(truth.attributions.length)
    for (const key of ['attributions', 'transactions', 'userOperations', 'reverted', 'activeCodes', 'uniqueSenders']) {
      await expect.poll(() => numberIn(`#summary-${key}`), { message: key }).toBe(summary.body.totals[key])
    }
    // the chain filter offers the indexed chain and narrows the figures
    await page.selectOption('#chain-select', String(chain.chainId))
    const oneChain = await request(`${api.url}/v1/analytics/summary?window=24h&chainId=${chain.chainId}`)
    await expect.poll(() => numberIn('#summary-attributions')).toBe(oneChain.body.totals.attributions)
    await page.selectOption('#chain-select', '')
  })

  it('lists invalid codes only when asked, flagged', async () => {
    const withInvalid = await request(`${api.url}/v1/analytics/leaderboard?window=24h&limit=20&include=invalid`)
    const invalid = withInvalid.body.entries.filter((entry: { invalid: boolean }) => entry.invalid)
    expect(invalid.length).toBeGreaterThan(0)
    await page.check('#include-invalid')
    await expect.poll(() => page.locator('#leaderboard tbody tr.invalid').count()).toBe(invalid.length)
    await page.uncheck('#include-invalid')
    await expect.poll(() => page.locator('#leaderboard tbody tr.invalid').count()).toBe(0)
  })

  it('searches a code and shows the API’s totals and a uPlot chart of its series, hourly for minutes-old traffic', async () => {
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
    // the code's traffic is minutes old: the view opens on its hourly 24 hours, not on 30 days of a flat line
    expect(await page.locator('#granularity-select').inputValue()).toBe('24h')
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
    shownCode = code
  })

  it('chart legends show the latest point without hovering', async () => {
    await page.mouse.move(0, 0)
    const summary = await request(`${api.url}/v1/analytics/summary?window=24h`)
    const hourly = await request(`${api.url}/v1/analytics/codes/${encodeURIComponent(shownCode)}/hourly?window=24h`)
    const latest = (point: { transactions: number; userOperations: number }) => ({ Transactions: point.transactions, UserOperations: point.userOperations })
    await expect.poll(() => legendOf(page, '#summary-chart')).toEqual(latest(summary.body.series.at(-1)))
    await expect.poll(() => legendOf(page, '#chart')).toEqual(latest(hourly.body.hourly.at(-1)))
    // the latest hour holds this test's traffic (sent minutes ago), unless the hour turned since
    const hour = await page.locator('#chart .u-legend .u-series:first-child .u-value').textContent()
    expect(hour).toBe(hourly.body.hourly.at(-1).hour.slice(0, 16).replace('T', ' '))
  })

  it('lists the code’s attributions with working links', async () => {
    const fromApi = await request(`${api.url}/v1/analytics/codes/${encodeURIComponent(shownCode)}/attributions?limit=25`)
    const rows = page.locator('#attributions tbody tr')
    await expect.poll(() => rows.count()).toBe(fromApi.body.attributions.length)
    const first = fromApi.body.attributions[0]
    const txLink = rows.first().locator('td:nth-child(3) a')
    expect(await txLink.getAttribute('href')).toBe(`${EXPLORER}/tx/${first.transactionHash}`)
    expect(await txLink.getAttribute('title')).toBe(first.transactionHash)

    // a UserOperation hash opens the validate panel on it, which answers from the index
    const op = fromApi.body.attributions.find((item: { userOpHash: string | null }) => item.userOpHash)
    const opRow = page.locator(`#attributions tbody tr[data-key="${op.chainId}:${op.transactionHash}:${op.userOpHash}"]`)
    await opRow.locator('td:nth-child(4) a').click()
    await expect.poll(() => page.locator('#validate-hash').inputValue()).toBe(op.userOpHash)
    await expect.poll(() => page.locator('#validate-json').textContent()).toContain(op.userOpHash)
    const shown = JSON.parse((await page.locator('#validate-json').textContent())!)
    expect([shown.attributed, shown.type, shown.userOpHash, shown.blockNumber]).toEqual([true, 'userOperation', op.userOpHash, op.blockNumber])
  })

  it('shows a new commit within 2 seconds, through the stream', async () => {
    const before = await numberIn('#total-total')
    const txHash = `0x${'ab'.repeat(32)}` as const
    expect(await commitOneAttribution(shownCode, txHash, 1_000_000, Date.now())).toEqual({ committed: true, inserted: 1 })
    const row = page.locator(`#attributions tbody tr[data-key="${chain.chainId}:${txHash}:"]`)
    await row.waitFor({ timeout: 2_000 })
    expect(await row.getAttribute('class')).toBe('flash')
    await expect.poll(() => numberIn('#total-total'), { timeout: 2_000 }).toBe(before + 1)
    await mkdir(OUTPUT_DIR, { recursive: true })
    await page.screenshot({ path: `${OUTPUT_DIR}dashboard-live.png`, fullPage: true })
  })

  for (const width of [1280, 420]) {
    it(`at ${width} px nothing is cut off: tables whole, rows even and distinct, timestamps on one line, legends with numbers`, async () => {
      const view = await browser.newPage({ viewport: { width, height: 900 } })
      try {
        await view.goto(`${api.url}/dashboard#code=${encodeURIComponent(shownCode)}`)
        await view.locator('#attributions tbody tr').first().waitFor()
        await view.locator('#leaderboard tbody tr').first().waitFor()
        await view.locator('#by-chain tbody tr').first().waitFor()
        // a validated UserOperation fills the last table
        const userOperation = truth.attributions.find((row) => row.kind === 'userOperation' && row.userOpHash && row.status === 'success')!
        await view.selectOption('#validate-type', 'userOperation')
        await view.fill('#validate-hash', userOperation.userOpHash!)
        await view.click('#validate-button')
        await view.locator('#validate-codes tbody tr').first().waitFor()
        await view.mouse.move(0, 0)
        await expect.poll(async () => (await layoutOf(view)).legends, { timeout: 10_000 }).toEqual({
          'summary-chart': [expect.stringMatching(/^\d{4}-\d\d-\d\d/), expect.stringMatching(/^[\d,]+$/), expect.stringMatching(/^[\d,]+$/)],
          chart: [expect.stringMatching(/^\d{4}-\d\d-\d\d/), expect.stringMatching(/^[\d,]+$/), expect.stringMatching(/^[\d,]+$/)],
        })
        await mkdir(OUTPUT_DIR, { recursive: true })
        await view.screenshot({ path: `${OUTPUT_DIR}dashboard-${width}.png`, fullPage: true })
        const layout = await layoutOf(view)
        expect(layout.viewport).toBe(width)
        expect(layout.cut, 'elements cut off the viewport').toEqual([])
        expect(layout.scrolled, 'boxes scrolling sideways').toEqual([])
        expect(layout.truncated, 'cells cut short').toEqual([])
        expect(layout.uneven, 'tables whose rows differ in height').toEqual([])
        expect(layout.wrappedTimes, 'timestamps on more than one line').toBe(0)
        expect(layout.duplicateRows, 'leaderboard rows that read alike').toEqual([])
        expect(layout.leaderboardRows).toBeGreaterThan(3)
      } finally {
        await view.close()
      }
    })
  }

  it('redirects / to the page and serves a favicon', async () => {
    const root = await fetch(`${api.url}/`, { redirect: 'manual' })
    expect([root.status, root.headers.get('location')]).toEqual([302, '/dashboard'])
    const icon = await fetch(`${api.url}/favicon.ico`)
    expect([icon.status, icon.headers.get('content-type')]).toEqual([200, 'image/svg+xml'])
    expect(await icon.text()).toMatch(/^<svg/)
  })

  it('runs the validation form and shows the decoded result', async () => {
    const attributed = truth.attributions.find((row) => row.kind === 'userOperation' && row.userOpHash && row.status === 'success')!
    const fromApi = await request(`${api.url}/v1/attribution/validate?type=userOperation&hash=${attributed.userOpHash}`)
    expect(fromApi.status).toBe(200)

    await page.selectOption('#validate-type', 'userOperation')
    await page.fill('#validate-hash', attributed.userOpHash!)
    await page.click('#validate-button')
    await page.locator('#validate-result').waitFor({ state: 'visible' })
    // an earlier test may have left another result shown: wait for this one's
    await expect.poll(async () => JSON.parse((await page.locator('#validate-json').textContent()) || 'null'), { timeout: 5_000 }).toEqual(fromApi.body)
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

  it('shows the API’s error message beside the validate form when validation fails', async () => {
    const unknown = `0x${'12'.repeat(32)}`
    const fromApi = await request(`${api.url}/v1/attribution/validate?type=transaction&hash=${unknown}`)
    expect(fromApi.status).toBe(404)
    await page.selectOption('#validate-type', 'transaction')
    await page.fill('#validate-hash', unknown)
    await page.click('#validate-button')
    const box = page.locator('#validate-error')
    await expect.poll(() => box.textContent()).toBe(fromApi.body.error.message)
    expect(await box.isVisible()).toBe(true)
    // right under the form, on screen with it: not in a banner far above
    const form = (await page.locator('#validate-form').boundingBox())!
    const shown = (await box.boundingBox())!
    expect(shown.y - (form.y + form.height)).toBeLessThan(40)
    expect(await box.evaluate((element) => element.getBoundingClientRect().top < (globalThis as unknown as { innerHeight: number }).innerHeight)).toBe(true)
  })

  it('a leaderboard row of a custom registry opens the code view of that registry alone, and says which', async () => {
    await page.goto(`${api.url}/dashboard`)
    const entries = (await request(`${api.url}/v1/analytics/leaderboard?window=24h&limit=20`)).body.entries as Array<{ rank: number; code: string; registry: string }>
    const custom = entries.find((entry) => entry.registry !== 'canonical')!
    const rows = page.locator('#leaderboard tbody tr')
    await expect.poll(() => rows.count()).toBe(entries.length)
    await rows.nth(custom.rank - 1).locator('td:nth-child(2) a').click()
    const fromApi = await request(`${api.url}/v1/analytics/codes/${encodeURIComponent(custom.code)}?registry=${encodeURIComponent(custom.registry)}`)
    await expect.poll(() => page.locator('#code-registry').textContent()).toBe(`registry ${custom.registry}`)
    expect(new URLSearchParams(new URL(page.url()).hash.slice(1)).get('registry')).toBe(custom.registry)
    expect(await page.locator('#code-name').textContent()).toBe(custom.code)
    await expect.poll(() => numberIn('#total-total')).toBe(fromApi.body.totals.total)
    // and the attribution list is that registry's only
    await expect.poll(() => page.locator('#attributions tbody tr td:last-child').evaluateAll((tds) => [...new Set(tds.map((td) => td.title || td.textContent))])).toEqual([
      custom.registry,
    ])
  })

  it('the code view follows the URL hash and Back', async () => {
    const entries = (await request(`${api.url}/v1/analytics/leaderboard?window=all&limit=20`)).body.entries as Array<{ code: string; registry: string }>
    const [first, second] = entries.filter((entry) => entry.registry === 'canonical')
    const totalOf = async (code: string) => (await request(`${api.url}/v1/analytics/codes/${encodeURIComponent(code)}?registry=canonical`)).body.totals.total
    // a hash typed or linked: the view shows its code
    await page.evaluate((hash) => ((globalThis as unknown as { location: { hash: string } }).location.hash = hash), `#code=${encodeURIComponent(first!.code)}&registry=canonical`)
    await expect.poll(() => page.locator('#code-name').textContent()).toBe(first!.code)
    await expect.poll(() => numberIn('#total-total')).toBe(await totalOf(first!.code))
    // a search is a new history entry
    await page.fill('#code-input', second!.code)
    await page.click('#search-button')
    await expect.poll(() => page.locator('#code-name').textContent()).toBe(second!.code)
    await page.goBack()
    await expect.poll(() => page.locator('#code-name').textContent()).toBe(first!.code)
    expect(await page.locator('#code-input').inputValue()).toBe(first!.code)
    await expect.poll(() => numberIn('#total-total')).toBe(await totalOf(first!.code))
    await page.goForward()
    await expect.poll(() => page.locator('#code-name').textContent()).toBe(second!.code)
  })

  it('on a chain without an explorer, the transaction link of a UserOperation row validates the UserOperation', async () => {
    // the same API, its answers as a chain without a known explorer gives them
    const withoutExplorer = async (route: import('playwright-core').Route) => {
      const response = await route.fetch()
      const body = (await response.json()) as { attributions: Array<{ explorerUrl: string | null }> }
      for (const item of body.attributions) item.explorerUrl = null
      await route.fulfill({ response, json: body })
    }
    await page.route('**/v1/analytics/codes/*/attributions?*', withoutExplorer)
    try {
      // a UserOperation among the rows the page lists (the code's newest 25)
      const listed = (await request(`${api.url}/v1/analytics/codes/${encodeURIComponent(shownCode)}/attributions?limit=25`)).body.attributions
      const op = listed.find((item: { kind: string }) => item.kind === 'userOperation')
      await page.evaluate((hash) => ((globalThis as unknown as { location: { hash: string } }).location.hash = hash), `#code=${encodeURIComponent(shownCode)}&from=`)
      const opRow = page.locator(`#attributions tbody tr[data-key="${op.chainId}:${op.transactionHash}:${op.userOpHash}"]`)
      await opRow.waitFor()
      const txLink = opRow.locator('td:nth-child(3) a')
      expect(await txLink.getAttribute('title')).toBe(op.transactionHash)
      expect(await txLink.getAttribute('href')).toBe(`/v1/attribution/validate?type=userOperation&hash=${op.userOpHash}&chainId=${op.chainId}`)
      // the panel as a fresh page has it, so only this click can fill it
      await page.selectOption('#validate-type', 'transaction')
      await page.locator('#validate-json').evaluate((element) => (element.textContent = ''))
      await txLink.click()
      await expect.poll(() => page.locator('#validate-type').inputValue()).toBe('userOperation')
      await expect.poll(() => page.locator('#validate-json').textContent()).toContain(op.userOpHash)
      const shown = JSON.parse((await page.locator('#validate-json').textContent())!)
      expect([shown.attributed, shown.type, shown.userOpHash]).toEqual([true, 'userOperation', op.userOpHash])
    } finally {
      await page.unroute('**/v1/analytics/codes/*/attributions?*', withoutExplorer)
    }
  })

  it('with activity three days old, opens the overview on 7 days and the code on its hourly 7 days', async () => {
    const threeDaysAgo = Date.now() - 3 * 86_400_000
    const before = (await request(`${api.url}/v1/analytics/summary?window=all`)).body.totals.attributions
    expect(await commitOneAttribution(shownCode, `0x${'cd'.repeat(32)}`, 1_000_001, threeDaysAgo)).toEqual({ committed: true, inserted: 1 })
    // the API's answers are cached until the commit's notification reaches it
    await expect.poll(async () => (await request(`${api.url}/v1/analytics/summary?window=all`)).body.totals.attributions).toBe(before + 1)
    // a fresh page (a goto that changes only the hash would keep the one open, fitted before)
    await page.goto('about:blank')
    await page.goto(`${api.url}/dashboard#code=${encodeURIComponent(shownCode)}`)
    // four summary reads fit the overview, three reads the code: on a loaded machine that is more than the default second
    await expect.poll(() => page.locator('#window-select').inputValue(), { timeout: 10_000 }).toBe('7d')
    await expect.poll(() => page.locator('#granularity-select').inputValue(), { timeout: 10_000 }).toBe('7d')
    const week = await request(`${api.url}/v1/analytics/summary?window=7d`)
    await expect.poll(() => numberIn('#summary-attributions')).toBe(week.body.totals.attributions)
    // the cards count the code's whole activity: the window runs from its first day
    const firstDay = new Date(threeDaysAgo).toISOString().slice(0, 10)
    const whole = await request(`${api.url}/v1/analytics/codes/${encodeURIComponent(shownCode)}?from=${firstDay}`)
    await expect.poll(() => numberIn('#total-total')).toBe(whole.body.totals.total)
    expect(await page.locator('#code-window').textContent()).toContain(firstDay)
  })

  it('loaded nothing from outside the service and raised no script errors', () => {
    expect(foreignRequests).toEqual([])
    // the 404 above is logged by Chromium as a failed resource load; anything else is a bug
    expect(pageErrors.filter((message) => !/status of 404/.test(message))).toEqual([])
  })
})
