// The dashboard draws only what the API answers: every number on the page
// comes from /v1/analytics and /v1/attribution, the chart is uPlot's.
import uPlot from './uPlot.esm.js'

const REFRESH_MS = 15_000
const $ = (selector) => document.querySelector(selector)
const formatNumber = new Intl.NumberFormat('en-US')

let chart
let current // { code, chainId, from, to } of the code on screen

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

function showError(message) {
  const box = $('#error')
  box.textContent = message
  box.hidden = !message
}

function query(params) {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(key, value)
  const text = search.toString()
  return text ? `?${text}` : ''
}

function cell(row, text) {
  const td = document.createElement('td')
  td.textContent = text
  row.append(td)
  return td
}

// --- code totals and chart ---

function renderTotals(data) {
  $('#code-name').textContent = data.code
  const badge = $('#code-registered')
  badge.textContent = data.registered ? 'registered' : 'not registered'
  badge.className = `badge ${data.registered ? 'yes' : 'no'}`
  $('#code-window').textContent = `${data.from} → ${data.to} (UTC)`
  for (const key of ['total', 'transactions', 'userOperations', 'reverted', 'suffixGas']) {
    const element = $(`#total-${key}`)
    element.textContent = formatNumber.format(data.totals[key])
    element.dataset.value = String(data.totals[key])
  }
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
  $('#code-result').hidden = false
}

function chartWidth() {
  return Math.max(320, $('#chart').clientWidth || 800)
}

function renderChart(daily) {
  const days = daily.map((point) => Date.parse(`${point.day}T00:00:00Z`) / 1000)
  const data = [days, daily.map((point) => point.transactions), daily.map((point) => point.userOperations)]
  if (chart) {
    chart.setData(data)
    return
  }
  chart = new uPlot(
    {
      width: chartWidth(),
      height: 280,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      scales: { y: { range: (_u, min, max) => [0, Math.max(1, max)] } },
      axes: [{}, { label: 'per day' }],
      series: [
        { label: 'Day', value: (_u, ts) => (ts == null ? '' : new Date(ts * 1000).toISOString().slice(0, 10)) },
        { label: 'Transactions', stroke: '#2754c5', fill: 'rgba(39,84,197,0.08)', width: 2 },
        { label: 'UserOperations', stroke: '#d9480f', fill: 'rgba(217,72,15,0.08)', width: 2 },
      ],
    },
    data,
    $('#chart'),
  )
}

async function loadCode(params) {
  const data = await getJson(`/v1/analytics/codes/${encodeURIComponent(params.code)}${query({ chainId: params.chainId, from: params.from, to: params.to })}`)
  renderTotals(data)
  renderChart(data.daily)
  current = params
}

async function searchCode(params) {
  const button = $('#search-button')
  button.disabled = true
  try {
    await loadCode(params)
    showError('')
    history.replaceState(null, '', `#${new URLSearchParams(Object.entries(params).filter(([, v]) => v)).toString()}`)
  } catch (error) {
    showError(error.message)
  } finally {
    button.disabled = false
  }
}

function readSearchForm() {
  return {
    code: $('#code-input').value.trim(),
    chainId: $('#chain-input').value.trim(),
    from: $('#from-input').value,
    to: $('#to-input').value,
  }
}

// --- leaderboard ---

async function loadLeaderboard() {
  const data = await getJson(`/v1/analytics/leaderboard${query({ window: $('#window-select').value, limit: 20 })}`)
  const body = $('#leaderboard tbody')
  body.replaceChildren()
  for (const entry of data.entries) {
    const row = document.createElement('tr')
    cell(row, String(entry.rank))
    const link = document.createElement('a')
    link.textContent = entry.code
    link.addEventListener('click', () => {
      $('#code-input').value = entry.code
      searchCode(readSearchForm())
    })
    cell(row, '').append(link)
    cell(row, formatNumber.format(entry.total))
    body.append(row)
  }
  $('#leaderboard-empty').hidden = data.entries.length > 0
}

async function refreshLeaderboard() {
  try {
    await loadLeaderboard()
  } catch (error) {
    showError(`Leaderboard: ${error.message}`)
  }
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
    showError('')
  } catch (error) {
    $('#validate-result').hidden = true
    showError(`Validation: ${error.message}`)
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
  $('#window-select').addEventListener('change', refreshLeaderboard)
  $('#validate-form').addEventListener('submit', (event) => {
    event.preventDefault()
    validate()
  })
  window.addEventListener('resize', () => chart?.setSize({ width: chartWidth(), height: 280 }))

  // a shared link like /dashboard#code=bc_… opens on that code
  const linked = new URLSearchParams(location.hash.slice(1))
  if (linked.get('code')) {
    $('#code-input').value = linked.get('code')
    $('#chain-input').value = linked.get('chainId') ?? ''
    $('#from-input').value = linked.get('from') ?? ''
    $('#to-input').value = linked.get('to') ?? ''
    searchCode(readSearchForm())
  }
  refreshLeaderboard()

  // polling is cheap: the API answers unchanged data with 304
  setInterval(() => {
    if (document.hidden) return
    refreshLeaderboard()
    if (current) loadCode(current).catch((error) => showError(error.message))
  }, REFRESH_MS)
}

start()
