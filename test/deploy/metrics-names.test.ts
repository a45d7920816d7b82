import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Running } from '../../src/bin/roles.js'
import { startAllInOne, type AllInOne } from '../support/all-in-one.js'

/**
 * The Grafana dashboard and the alert rules in deploy/ name metrics by hand:
 * a renamed or removed series would leave a panel empty and an alert that
 * never fires, silently. Every name they use must be one the running service
 * (all roles, indexing a chain) exports at /metrics.
 */
const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url))
const DASHBOARD = `${DEPLOY}grafana/attribution-indexer.json`
const ALERTS = `${DEPLOY}prometheus/alerts.yml`

/** Series Prometheus writes itself for every scrape target; no exporter has them. */
const SCRAPE_SERIES = new Set(['up', 'scrape_duration_seconds', 'scrape_samples_scraped'])

/** PromQL's keywords, which look like names. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'atan2'])

/**
 * The metric names a PromQL expression reads. Strings, label matchers, range
 * selectors and label lists (`by (…)`, `on (…)`) are taken out first; of the
 * words left, a word before `(` is a function and a word glued to a number
 * (`5m`, `1e3`) is not a name.
 */
export function metricNamesIn(expression: string): string[] {
  const bare = expression
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
  const names = new Set<string>()
  for (const [, word, call] of bare.matchAll(/(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (!call && !KEYWORDS.has(word!.toLowerCase())) names.add(word!)
  }
  return [...names]
}

/** Every PromQL expression of a Grafana dashboard: panel targets (rows included) and query variables. */
function dashboardExpressions(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) dashboardExpressions(item, found)
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'expr' && typeof value === 'string') found.push(value)
      // a variable's label_values(metric, label) names its metric as the first argument
      else if (key === 'definition' && typeof value === 'string') {
        const metric = /label_values\(\s*([a-zA-Z_:][\w:]*)/.exec(value)
        if (metric) found.push(metric[1]!)
      } else dashboardExpressions(value, found)
    }
  }
  return found
}

/**
 * The `expr:` values of a Prometheus rule file: one line each, quoted or
 * not, or a block scalar (`|`, `>`) whose lines are indented below it. The
 * project carries no YAML parser; rule files keep this shape.
 */
export function ruleExpressions(yaml: string): string[] {
  const lines = yaml.split('\n')
  const found: string[] = []
  lines.forEach((line, index) => {
    const match = /^\s*(?:-\s+)?expr:\s*(.*)$/.exec(line)
    if (!match) return
    const value = match[1]!.trim()
    if (/^[|>][-+]?$/.test(value)) {
      // the block is the lines indented deeper than the key (a list item's key sits after its `- `)
      const keyColumn = line.indexOf('expr:')
      const block: string[] = []
      for (const next of lines.slice(index + 1)) {
        if (next.trim() && next.search(/\S/) <= keyColumn) break
        if (next.trim()) block.push(next.trim())
      }
      found.push(block.join(' '))
    } else found.push(value.replace(/^(['"])(.*)\1$/, '$2'))
  })
  return found
}

/** The names a /metrics answer exports, from its `# TYPE` lines: a histogram's series too. */
export function exportedNames(exposition: string): Set<string> {
  const names = new Set<string>()
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!)
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`)
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(`${name}${suffix}`)
  }
  return names
}

describe('reading metric names', () => {
  it('finds every name in an expression and nothing else', () => {
    expect(
      metricNamesIn(
        'histogram_quantile(0.99, sum by (le, route) (rate(http_request_duration_seconds_bucket{route!="/v1/a{b}"}[$__rate_interval]))) > 1e3 ' +
          'and max by (chain_id) (changes(indexer_indexed_block[15m] offset 5m)) == 0 or on (chain_id) up{job="x"}',
      ).sort(),
    ).toEqual(['http_request_duration_seconds_bucket', 'indexer_indexed_block', 'up'])
    expect(ruleExpressions('rules:\n  - expr: a > 1\n  - expr: "b == 0"\n  - expr: |\n      c\n      / d\n    for: 5m\n')).toEqual(['a > 1', 'b == 0', 'c / d'])
  })
})

describe('deploy/ names only exported metrics', () => {
  let allInOne: AllInOne
  let running: Running

  beforeAll(async () => {
    // every role in one process: the API, the follower and the workers each register their own series
    allInOne = await startAllInOne('metricnames', { transactions: 12, blocks: 3 })
    running = allInOne.running
  }, 120_000)

  afterAll(async () => {
    await allInOne?.stop()
  })

  async function scrape() {
    // a request first, so the HTTP series have been observed as a scrape would find them in service
    await fetch(`${running.url}/v1/indexer/status`)
    const response = await fetch(`${running.url}/metrics`)
    expect(response.status).toBe(200)
    return exportedNames(await response.text())
  }

  const missingFrom = (exported: Set<string>, expressions: string[]) =>
    [...new Set(expressions.flatMap(metricNamesIn))].filter((name) => !exported.has(name) && !SCRAPE_SERIES.has(name)).sort()

  it('the Grafana dashboard', async () => {
    const expressions = dashboardExpressions(JSON.parse(await readFile(DASHBOARD, 'utf8')))
    const named = new Set(expressions.flatMap(metricNamesIn))
    // the series the issue asks the dashboard for are there
    for (const name of ['indexer_lag_blocks', 'indexer_blocks_processed_total', 'indexer_stuck_ranges', 'indexer_rpc_endpoint_healthy', 'http_request_duration_seconds_bucket', 'indexer_queue_jobs']) {
      expect(named, name).toContain(name)
    }
    expect(missingFrom(await scrape(), expressions)).toEqual([])
  })

  it('the Prometheus alert rules', async () => {
    const expressions = ruleExpressions(await readFile(ALERTS, 'utf8'))
    expect(expressions.length).toBeGreaterThanOrEqual(5)
    const named = new Set(expressions.flatMap(metricNamesIn))
    for (const name of ['indexer_lag_blocks', 'indexer_stuck_ranges', 'indexer_rpc_endpoint_healthy', 'up']) expect(named, name).toContain(name)
    expect(missingFrom(await scrape(), expressions)).toEqual([])
  })
})
