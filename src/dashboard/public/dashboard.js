// The dashboard draws only what the API answers: every number on the page
// comes from /v1/analytics, /v1/indexer and /v1/attribution, the charts are
// uPlot's. Updates come from the attribution stream (server-sent events),
// not from polling: a commit or rollback refreshes what it can change.
import uPlot from './uPlot.esm.js'

const $ = (selector) => document.querySelector(selector)
const formatNumber = new Intl.NumberFormat('en-US')
const formatPercent = new Intl.NumberFormat('en-US', { style: 'percent', maximumFractionDigits: 1 })
/** Status has no event of its own (head moves without commits): re-read it this often. */
const STATUS_REFRESH_MS = 10_000

let chart
let summaryChart
let current // { code, chainId, from, to } of the code on screen
let attributionsCursor
/** Set once the reader picks a window or a series: from then on the page no longer fits them to the data. */
let overviewWindowChosen = false
let granularityChosen = false

class ApiError extends Error {}

async function getJson(path) {
  let response
  try {
    response = await fetch(path, { headers: { accept: 'application/json' } })
  } catch (error) {
    throw new ApiError(`The API could not be reached (${error.message})`)
  }
  const body = await response.json().catch(() => undefined)
  if (!response.ok) throw new ApiError(body?.error?.message ?? `The API answered ${response.status}`)
  return body
}

/** Shows a message in an error box: the page's banner, or the one beside the form the error is about. */
function showError(message, selector = '#error') {
  const box = $(selector)
  box.textContent = message
  box.hidden = !message
}

function query(params) {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(key, value)
  const text = search.toString()
  return text ? `?${text}` : ''
}

function setNumber(selector, value) {
  const element = $(selector)
  element.textContent = formatNumber.format(value)
  element.dataset.value = String(value)
}

function cell(row, text) {
  const td = document.createElement('td')
  td.textContent = text
  row.append(td)
  return td
}

/**
 * Gives each body cell its column's short label (the header's data-label):
 * on a phone the header row is hidden and a row is a grid of labelled cells.
 */
function labelCells(table) {
  const labels = [...table.querySelectorAll('thead th')].map((th) => th.dataset.label)
  for (const row of table.tBodies[0].rows) {
    ;[...row.cells].forEach((td, index) => {
      if (labels[index]) td.dataset.label = labels[index]
    })
  }
}

/** A registry cell: `chainId:0x1234…abcd` for a custom registry (the whole name on hover), `canonical` as it is. */
function registryCell(row, registry) {
  const match = /^(\d+):(0x[0-9a-fA-F]{40})$/.exec(registry)
  const td = cell(row, match ? `${match[1]}:${match[2].slice(0, 6)}…${match[2].slice(-4)}` : registry)
  if (match) td.title = registry
  return td
}

// --- code totals and chart ---

function renderTotals(data) {
  $('#code-name').textContent = data.code
  const badge = $('#code-registered')
  badge.textContent = data.registered ? 'registered' : 'not registered'
  badge.className = `badge ${data.registered ? 'yes' : 'no'}`
  $('#code-window').textContent = `${data.from} → ${data.to} (UTC)`
  for (const key of ['total', 'transactions', 'userOperations', 'reverted', 'suffixGas']) setNumber(`#total-${key}`, data.totals[key])
  setNumber('#total-uniqueSenders', data.uniqueSenders)
  const body = $('#by-chain tbody')
  body.replaceChildren()
  for (const chain of data.byChain) {
    const row = document.createElement('tr')
    cell(row, String(chain.chainId))
    for (const value of [chain.transactions, chain.userOperations, chain.total, chain.reverted, chain.suffixGas]) {
      cell(row, formatNumber.format(value))
    }
    body.append(row)
  }
  labelCells($('#by-chain'))
  $('#code-result').hidden = false
}

function chartWidth(element) {
  return Math.max(260, element.clientWidth || 800)
}

const HOUR_TICKS = [1, 2, 3, 6, 12].map((hours) => hours * 3_600).concat([1, 2, 7, 14, 30, 91, 182, 365].map((days) => days * 86_400))
const DAY_TICKS = HOUR_TICKS.filter((seconds) => seconds >= 86_400)
const isHourly = (times) => times.length > 1 && times[1] - times[0] < 86_400

/**
 * uPlot's legend shows `--` unless the cursor is over the chart: with no
 * cursor it shows the latest point instead, so the figures read at a glance
 * (and on a phone, where there is no hover). `false` keeps uPlot from firing
 * this hook again.
 */
function showLatestWhenIdle(plot) {
  const last = plot.data[0].length - 1
  if (plot.cursor.idx == null && last >= 0) plot.setLegend({ idx: last }, false)
}

/** A two-line uPlot chart (transactions, UserOperations) over hourly or daily points; times in seconds. */
function drawSeries(existing, element, times, transactions, userOperations, height) {
  const data = [times, transactions, userOperations]
  if (existing && existing.hourly === isHourly(times)) {
    existing.plot.setData(data)
    return existing
  }
  existing?.plot.destroy()
  const hourly = isHourly(times)
  const plot = new uPlot(
    {
      width: chartWidth(element),
      height,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      // ticks no finer than the buckets: a 6-hour chart of hourly points would otherwise be labelled every 15 minutes
      axes: [{ space: 60, incrs: hourly ? HOUR_TICKS : DAY_TICKS }, { label: hourly ? 'per hour' : 'per day' }],
      hooks: { setLegend: [showLatestWhenIdle] },
      series: [
        { label: hourly ? 'Hour' : 'Day', value: (_u, ts) => (ts == null ? '' : new Date(ts * 1000).toISOString().slice(0, hourly ? 16 : 10).replace('T', ' ')) },
        { label: 'Transactions', stroke: '#2754c5', fill: 'rgba(39,84,197,0.08)', width: 2 },
        { label: 'UserOperations', stroke: '#d9480f', fill: 'rgba(217,72,15,0.08)', width: 2 },
      ],
    },
    data,
    element,
  )
  return { plot, hourly }
}

/** Fewest buckets a fitted chart keeps, so a single active hour still has a little context before it. */
const FITTED_MIN_POINTS = 6

/**
 * The points a chart draws: all of them for a window the reader chose; for
 * a window fitted to the data, from one bucket before the first activity on
 * (at least FITTED_MIN_POINTS), so the activity fills the chart instead of
 * sitting at its right edge.
 */
function drawnPoints(points, fitted) {
  if (!fitted) return points
  const first = points.findIndex((point) => point.transactions + point.userOperations + (point.reverted ?? 0) > 0)
  if (first < 0) return points
  return points.slice(Math.max(0, Math.min(first - 1, points.length - FITTED_MIN_POINTS)))
}

function renderChart(allPoints, timeOf) {
  const points = drawnPoints(allPoints, !granularityChosen)
  const times = points.map((point) => Date.parse(timeOf(point)) / 1000)
  chart = drawSeries(chart, $('#chart'), times, points.map((p) => p.transactions), points.map((p) => p.userOperations), 280)
}

/** A code is identified with its registry: every code route gets the same namespace (none: all added together). */
function codeQuery(params, extra = {}) {
  return query({ chainId: params.chainId, registry: params.registry, ...extra })
}

const DAY_MS = 86_400_000
const dayOf = (ms) => new Date(ms).toISOString().slice(0, 10)
const activityOf = (point) => point.transactions + point.userOperations + point.reverted

/**
 * The window that fits a code's data, for a view opened with no dates: the
 * days from its first activity in the last year to today, drawn hourly over
 * 24 hours or 7 days when those hold all of it. On a fresh devnet everything
 * is in the last hour, and a 30-day daily chart would be a flat line with a
 * spike at its right edge.
 */
async function fitCodeWindow(params) {
  const path = `/v1/analytics/codes/${encodeURIComponent(params.code)}`
  const today = dayOf(Date.now())
  const [year, day, week] = await Promise.all([
    getJson(`${path}${codeQuery(params, { from: dayOf(Date.now() - 365 * DAY_MS), to: today })}`),
    getJson(`${path}/hourly${codeQuery(params, { window: '24h' })}`),
    getJson(`${path}/hourly${codeQuery(params, { window: '7d' })}`),
  ])
  const everything = year.totals.transactions + year.totals.userOperations + year.totals.reverted
  // a day's senders count its reverted activity too, which its transactions and userOperations leave out
  const firstDay = year.daily.find((point) => point.transactions + point.userOperations + point.uniqueSenders > 0)?.day
  // nothing this year: the API's own default window
  if (everything === 0 || !firstDay) return { params, granularity: 'daily' }
  const held = (series) => series.hourly.reduce((sum, point) => sum + activityOf(point), 0) === everything
  const granularity = held(day) ? '24h' : held(week) ? '7d' : 'daily'
  return { params: { ...params, from: firstDay, to: today }, granularity }
}

async function loadCode(params) {
  const path = `/v1/analytics/codes/${encodeURIComponent(params.code)}`
  const granularity = $('#granularity-select').value
  const [data, hourly] = await Promise.all([
    getJson(`${path}${codeQuery(params, { from: params.from, to: params.to })}`),
    granularity === 'daily' ? undefined : getJson(`${path}/hourly${codeQuery(params, { window: granularity })}`),
  ])
  renderTotals(data)
  $('#code-registry').textContent = data.registry ? `registry ${data.registry}` : 'every registry'
  if (hourly) renderChart(hourly.hourly, (point) => point.hour)
  else renderChart(data.daily, (point) => `${point.day}T00:00:00Z`)
  $('#series-csv').href =
    granularity === 'daily'
      ? `${path}${codeQuery(params, { from: params.from, to: params.to, format: 'csv' })}`
      : `${path}/hourly${codeQuery(params, { window: granularity, format: 'csv' })}`
  $('#attributions-csv').href = `${path}/attributions${codeQuery(params, { format: 'csv', limit: 500 })}`
  current = params
  await loadAttributions(params, false)
}

// --- a code's attributions ---

function hashLink(text, href, onClick) {
  const link = document.createElement('a')
  // enough to tell hashes apart at a glance; the whole hash is the link's title
  link.textContent = `${text.slice(0, 8)}…${text.slice(-4)}`
  link.title = text
  link.href = href
  if (onClick) link.addEventListener('click', onClick)
  else {
    link.target = '_blank'
    link.rel = 'noopener noreferrer'
  }
  return link
}

/** Checks one attribution in the validate panel: the link for chains without a known explorer. */
function validateLink(type, hash, chainId, shown = hash) {
  const href = `/v1/attribution/validate${query({ type, hash, chainId })}`
  return hashLink(shown, href, (event) => {
    event.preventDefault()
    $('#validate-type').value = type
    $('#validate-hash').value = hash
    $('#validate-chain').value = String(chainId)
    validate()
    $('#validate-panel').scrollIntoView({ block: 'start' })
  })
}

function attributionRow(item) {
  const row = document.createElement('tr')
  row.dataset.key = `${item.chainId}:${item.transactionHash}:${item.userOpHash ?? ''}`
  cell(row, item.timestamp.slice(0, 19).replace('T', ' '))
  cell(row, item.kind)
  const tx = cell(row, '')
  tx.className = 'hash'
  // a UserOperation's bundle transaction carries no suffix of its own: without an explorer, its link validates the UserOperation
  if (item.explorerUrl) tx.append(hashLink(item.transactionHash, item.explorerUrl))
  else if (item.kind === 'userOperation' && item.userOpHash) tx.append(validateLink('userOperation', item.userOpHash, item.chainId, item.transactionHash))
  else tx.append(validateLink('transaction', item.transactionHash, item.chainId))
  const op = cell(row, '')
  op.className = 'hash'
  if (item.userOpHash) op.append(validateLink('userOperation', item.userOpHash, item.chainId))
  cell(row, String(item.chainId))
  cell(row, formatNumber.format(item.blockNumber))
  cell(row, item.status)
  cell(row, formatNumber.format(item.suffixGas))
  cell(row, String(item.schemaId))
  registryCell(row, item.registry)
  return row
}

async function loadAttributions(params, more) {
  const page = await getJson(
    `/v1/analytics/codes/${encodeURIComponent(params.code)}/attributions${codeQuery(params, { limit: 25, cursor: more ? attributionsCursor : undefined })}`,
  )
  const body = $('#attributions tbody')
  const known = new Set([...body.children].map((row) => row.dataset.key))
  if (!more) body.replaceChildren()
  for (const item of page.attributions) {
    const row = attributionRow(item)
    // rows that were not on screen before a live refresh are highlighted
    if (!more && known.size > 0 && !known.has(row.dataset.key)) row.classList.add('flash')
    body.append(row)
  }
  labelCells($('#attributions'))
  attributionsCursor = page.nextCursor
  $('#attributions-more').hidden = !page.nextCursor
}

const HASH_FIELDS = { code: '#code-input', registry: '#code-registry-input', chainId: '#chain-input', from: '#from-input', to: '#to-input' }

function hashOf(params) {
  return `#${new URLSearchParams(Object.entries(params).filter(([, value]) => value)).toString()}`
}

/**
 * A search is a new URL hash (a history entry, so Back returns to the code
 * shown before); the hash is what the code view follows (showHashedCode).
 */
function searchCode(params) {
  const hash = hashOf(params)
  if (location.hash === hash) showHashedCode()
  else location.hash = hash
}

/** Shows the code the URL hash names (typed, shared, or reached with Back and Forward). */
async function showHashedCode() {
  const linked = new URLSearchParams(location.hash.slice(1))
  if (!linked.get('code')) return
  for (const [key, selector] of Object.entries(HASH_FIELDS)) $(selector).value = linked.get(key) ?? ''
  const button = $('#search-button')
  button.disabled = true
  try {
    let params = readSearchForm()
    // no dates asked for and no series chosen by hand: the window that fits the code's data (the form keeps
    // its empty dates, so the next code searched is fitted to its own data; the window is written above the cards)
    if (!params.from && !params.to && !granularityChosen) {
      const fitted = await fitCodeWindow(params)
      params = fitted.params
      $('#granularity-select').value = fitted.granularity
    }
    await loadCode(params)
    showError('', '#code-error')
    $('#code-result').hidden = false
  } catch (error) {
    showError(error.message, '#code-error')
  } finally {
    button.disabled = false
  }
}

function readSearchForm() {
  return {
    code: $('#code-input').value.trim(),
    registry: $('#code-registry-input').value.trim(),
    chainId: $('#chain-input').value.trim(),
    from: $('#from-input').value,
    to: $('#to-input').value,
  }
}

// --- leaderboard ---

/** The overview's windows, smallest first. */
const OVERVIEW_WINDOWS = ['24h', '7d', '30d', 'all']

/**
 * The smallest window holding everything indexed (24 hours on an empty
 * index): the overview opens on it, so a fresh devnet's hour of traffic is
 * not a spike at the edge of a week. Each window's total is one summary read
 * from the aggregate tables.
 */
async function fitOverviewWindow() {
  const totals = await Promise.all(OVERVIEW_WINDOWS.map(async (window) => (await getJson(`/v1/analytics/summary?window=${window}`)).totals.attributions))
  return OVERVIEW_WINDOWS[totals.indexOf(totals.at(-1))]
}

function filters() {
  return { window: $('#window-select').value, chainId: $('#chain-select').value }
}

async function loadLeaderboard() {
  const params = {
    ...filters(),
    limit: 20,
    include: $('#include-invalid').checked ? 'invalid' : undefined,
    registry: $('#registry-input').value.trim(),
  }
  const data = await getJson(`/v1/analytics/leaderboard${query(params)}`)
  $('#leaderboard-csv').href = `/v1/analytics/leaderboard${query({ ...params, format: 'csv' })}`
  const body = $('#leaderboard tbody')
  body.replaceChildren()
  for (const entry of data.entries) {
    const row = document.createElement('tr')
    if (entry.invalid) row.classList.add('invalid')
    cell(row, String(entry.rank))
    const link = document.createElement('a')
    link.textContent = entry.code
    // the row's registry goes with its code: the view shows that namespace alone, never others added in
    link.href = hashOf({ code: entry.code, registry: entry.registry })
    link.addEventListener('click', (event) => {
      event.preventDefault()
      $('#code-input').value = entry.code
      $('#code-registry-input').value = entry.registry
      searchCode(readSearchForm())
      $('#code-panel').scrollIntoView({ block: 'start' })
    })
    const codeCell = cell(row, '')
    codeCell.append(link)
    if (entry.invalid) codeCell.append(' ', Object.assign(document.createElement('span'), { className: 'badge no', textContent: 'invalid' }))
    cell(row, formatNumber.format(entry.total))
    cell(row, formatNumber.format(entry.transactions))
    cell(row, formatNumber.format(entry.userOperations))
    cell(row, formatNumber.format(entry.reverted))
    cell(row, formatPercent.format(entry.share))
    cell(row, entry.change === null ? '–' : `${entry.change > 0 ? '+' : ''}${formatNumber.format(entry.change)}`)
    registryCell(row, entry.registry)
    const wallet = cell(row, entry.walletAddress ? `${entry.walletAddress.slice(0, 8)}…` : '')
    if (entry.walletAddress) wallet.title = entry.walletAddress
    body.append(row)
  }
  labelCells($('#leaderboard'))
  $('#leaderboard-empty').hidden = data.entries.length > 0
}

// --- summary and indexer status ---

async function loadSummary() {
  const data = await getJson(`/v1/analytics/summary${query(filters())}`)
  for (const key of ['attributions', 'transactions', 'userOperations', 'reverted', 'activeCodes', 'uniqueSenders']) setNumber(`#summary-${key}`, data.totals[key])
  const points = drawnPoints(data.series, !overviewWindowChosen)
  const times = points.map((point) => Date.parse(point.start) / 1000)
  summaryChart = drawSeries(summaryChart, $('#summary-chart'), times, points.map((p) => p.transactions), points.map((p) => p.userOperations), 200)
}

function chainBadge(chain) {
  const box = document.createElement('span')
  box.className = `chain${chain.rangesStuck > 0 ? ' stuck' : ''}`
  box.dataset.chainId = String(chain.chainId)
  const lag = chain.lagBlocks === null ? 'lag unknown' : `lag ${formatNumber.format(chain.lagBlocks)} blocks${chain.lagSeconds === null ? '' : ` (${formatNumber.format(chain.lagSeconds)} s)`}`
  const parts = [
    `chain ${chain.chainId}`,
    `head ${chain.headBlock === null ? '–' : formatNumber.format(chain.headBlock)}`,
    `indexed ${chain.indexedBlock === null ? '–' : formatNumber.format(chain.indexedBlock)}`,
    lag,
    `${chain.rangesPending} pending`,
    `${chain.rangesStuck} stuck`,
    `${formatNumber.format(chain.lastMinute.blocks)} blocks/min`,
    ...(chain.endpoints ?? []).map(endpointPart),
  ]
  box.textContent = parts.join(' · ')
  const titles = [
    ...(chain.lastError ? [`last error ${chain.lastError.at}: ${chain.lastError.message}`] : []),
    ...(chain.endpoints ?? []).filter((endpoint) => endpoint.lastError).map((endpoint) => `${endpoint.url}: ${endpoint.lastError}`),
  ]
  if (titles.length) box.title = titles.join('\n')
  return box
}

/** One RPC endpoint in the status line: its host (the URL is already redacted), health and measured throughput. */
function endpointPart(endpoint) {
  let host = endpoint.url
  try {
    host = new URL(endpoint.url).host
  } catch {}
  const rate = endpoint.itemsPerSecond === null ? 'unmeasured' : `${formatNumber.format(Math.round(endpoint.itemsPerSecond))} items/s`
  const point = endpoint.concurrency === null ? '' : `, ${endpoint.concurrency} in flight`
  return `${host} ${endpoint.state === 'healthy' ? '✓' : `✗ ${endpoint.state}`} ${rate}${point}, ${formatNumber.format(endpoint.errors)} failed`
}

async function loadStatus() {
  const data = await getJson('/v1/indexer/status')
  $('#status').replaceChildren(...(data.chains.length ? data.chains.map(chainBadge) : [Object.assign(document.createElement('span'), { className: 'muted', textContent: 'No chain indexed yet' })]))
  // the chain filter offers the chains the indexer knows
  const select = $('#chain-select')
  const offered = new Set([...select.options].map((option) => option.value))
  for (const chain of data.chains) {
    if (offered.has(String(chain.chainId))) continue
    select.append(new Option(`chain ${chain.chainId}`, String(chain.chainId)))
  }
}

async function refreshOverview() {
  try {
    await Promise.all([loadSummary(), loadLeaderboard()])
  } catch (error) {
    showError(`Overview: ${error.message}`)
  }
}

/** The first overview: on the window that fits the data, unless the reader already chose one. */
async function openOverview() {
  try {
    const fitted = await fitOverviewWindow()
    if (!overviewWindowChosen) $('#window-select').value = fitted
  } catch (error) {
    showError(`Overview: ${error.message}`)
  }
  await refreshOverview()
}

async function refreshStatus() {
  try {
    await loadStatus()
  } catch (error) {
    showError(`Indexer status: ${error.message}`)
  }
}

// --- live updates ---

/** Several events in a burst (one per code of a range) cause one refresh. */
function debounce(fn, ms) {
  let timer
  return () => {
    clearTimeout(timer)
    timer = setTimeout(fn, ms)
  }
}

function connectStream() {
  const live = $('#live')
  const stream = new EventSource('/v1/attribution/stream')
  const refreshAll = debounce(() => {
    refreshOverview()
    refreshStatus()
  }, 150)
  const refreshCode = debounce(() => {
    if (current) loadCode(current).catch((error) => showError(error.message))
  }, 150)
  const onEvent = (message) => {
    const event = JSON.parse(message.data)
    refreshAll()
    if (current && event.code === current.code) refreshCode()
  }
  stream.addEventListener('commit', onEvent)
  stream.addEventListener('rollback', onEvent)
  // what was missed while away could not be replayed whole: re-read everything shown
  stream.addEventListener('reset', () => {
    refreshAll()
    refreshCode()
  })
  stream.addEventListener('open', () => {
    live.textContent = 'live'
    live.className = 'badge yes'
  })
  // EventSource reconnects by itself, sending Last-Event-ID so nothing is missed
  stream.addEventListener('error', () => {
    live.textContent = 'reconnecting…'
    live.className = 'badge no'
  })
}

// --- validation ---

function renderValidation(result) {
  const summary = $('#validate-summary')
  summary.replaceChildren()
  const verdict = document.createElement('span')
  verdict.className = result.attributed ? 'yes' : 'no'
  verdict.textContent = result.attributed ? 'Attributed' : result.malformed ? `Malformed suffix: ${result.malformed.reason}` : 'Not attributed'
  summary.append(verdict)
  const facts = [
    `${result.type} on chain ${result.chainId}`,
    `block ${result.blockNumber}`,
    `status ${result.status}`,
    result.schemaId !== undefined ? `schema ${result.schemaId}` : undefined,
    result.suffixGas !== undefined ? `suffix gas ${result.suffixGas}` : undefined,
    `from the ${result.source}`,
  ].filter(Boolean)
  summary.append(` — ${facts.join(' · ')}`)
  const body = $('#validate-codes tbody')
  body.replaceChildren()
  for (const code of result.codes) {
    const row = document.createElement('tr')
    cell(row, code.code)
    cell(row, code.role)
    cell(row, code.valid ? 'yes' : 'no')
    cell(row, code.registered ? 'yes' : 'no')
    cell(row, code.walletAddress ?? '')
    body.append(row)
  }
  labelCells($('#validate-codes'))
  $('#validate-codes').hidden = result.codes.length === 0
  $('#validate-json').textContent = JSON.stringify(result, null, 2)
  $('#validate-result').hidden = false
}

async function validate() {
  const button = $('#validate-button')
  button.disabled = true
  try {
    const params = { type: $('#validate-type').value, hash: $('#validate-hash').value.trim(), chainId: $('#validate-chain').value.trim() }
    renderValidation(await getJson(`/v1/attribution/validate${query(params)}`))
    showError('', '#validate-error')
  } catch (error) {
    $('#validate-result').hidden = true
    // beside the form it is about, where the eyes are
    showError(error.message, '#validate-error')
  } finally {
    button.disabled = false
  }
}

// --- wiring ---

function start() {
  $('#search-form').addEventListener('submit', (event) => {
    event.preventDefault()
    searchCode(readSearchForm())
  })
  $('#window-select').addEventListener('change', () => {
    overviewWindowChosen = true
    refreshOverview()
  })
  $('#chain-select').addEventListener('change', refreshOverview)
  $('#include-invalid').addEventListener('change', refreshOverview)
  $('#registry-input').addEventListener('change', refreshOverview)
  $('#granularity-select').addEventListener('change', () => {
    granularityChosen = true
    if (current) loadCode(current).catch((error) => showError(error.message))
  })
  $('#attributions-more').addEventListener('click', () => current && loadAttributions(current, true).catch((error) => showError(error.message)))
  $('#validate-form').addEventListener('submit', (event) => {
    event.preventDefault()
    validate()
  })
  window.addEventListener('resize', () => {
    if (chart) chart.plot.setSize({ width: chartWidth($('#chart')), height: 280 })
    if (summaryChart) summaryChart.plot.setSize({ width: chartWidth($('#summary-chart')), height: 200 })
  })

  // a shared link like /dashboard#code=bc_…&registry=canonical opens on that code; a changed hash (Back, Forward, typed) shows its code
  window.addEventListener('hashchange', showHashedCode)
  showHashedCode()
  refreshStatus()
  openOverview()
  connectStream()
  setInterval(() => {
    if (!document.hidden) refreshStatus()
  }, STATUS_REFRESH_MS)
}

start()
