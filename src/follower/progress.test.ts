import { Writable } from 'node:stream'
import { Registry } from 'prom-client'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createLogger } from '../logger.js'
import { createIndexerMetrics } from '../metrics/indexer.js'
import { createTestDatabase, type TestDatabase } from '../../test/support/services.js'
import { createProgressReporter } from './progress.js'

let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase('progress')
})
afterAll(async () => {
  vi.useRealTimers()
  await database?.drop()
})

const T0 = Date.parse('2026-11-20T12:00:00Z')
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString()

describe('backfill progress', () => {
  it('logs every 10 s with rates, blocks left, ETA and each endpoint’s operating point, then one caught-up line with totals; the same as gauges', async () => {
    const sql = database.db.$client
    // ten ranges of ten blocks, 0-99, each with 20 transactions and 3 attribution rows once done
    for (let from = 0; from < 100; from += 10) {
      await sql`insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash, status)
        values (7, ${from}, ${from + 9}, '0xp', '0xh', 'pending')`
    }
    const lines: Record<string, unknown>[] = []
    const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(JSON.parse(String(chunk))), done()) })
    const registry = new Registry()
    const reporter = createProgressReporter({
      chainId: 7,
      startBlock: 0,
      logger: createLogger({ level: 'info', destination: sink }),
      metrics: createIndexerMetrics(registry),
      liveWindow: 5,
      // what the fetching processes published: the line says where the transport runs and what it delivers
      endpoints: async () => [{ url: 'https://rpc.example/***', state: 'healthy', itemsPerSecond: 812.4, concurrency: 4, blockBatchSize: 10 }],
    })
    const reserved = await sql.reserve()
    // only Date is faked: the driver's own timers keep running
    vi.useFakeTimers({ now: T0, toFake: ['Date'] })
    try {
      await reporter.report(reserved, 99)
      await sql`update ranges set status = 'done', tx_count = 20, attribution_count = 3, done_at = ${at(5)} where chain_id = 7 and from_block < 50`
      vi.setSystemTime(T0 + 4_000)
      await reporter.report(reserved, 99) // within the 10 s: nothing
      vi.setSystemTime(T0 + 10_000)
      await reporter.report(reserved, 99)
      const gauges = (await registry.getMetricsAsJSON()).filter((metric) => metric.name.startsWith('indexer_backfill'))
      expect(gauges.map((metric) => [metric.name, metric.values.map((value) => [value.labels.unit ?? '', value.value])])).toEqual([
        ['indexer_backfill_rate_per_second', [['blocks', 5], ['transactions', 10], ['attributions', 1.5]]],
        ['indexer_backfill_blocks_remaining', [['', 50]]],
        ['indexer_backfill_eta_seconds', [['', 10]]],
      ])
      await sql`update ranges set status = 'done', tx_count = 20, attribution_count = 3, done_at = ${at(15)} where chain_id = 7 and from_block >= 50`
      vi.setSystemTime(T0 + 16_000)
      await reporter.report(reserved, 99)
      await reporter.report(reserved, 100) // following the head: quiet
    } finally {
      vi.useRealTimers()
      reserved.release()
    }
    expect(lines.map(({ msg, level, time, pid, ...fields }) => ({ msg, ...fields }))).toEqual([
      { msg: 'backfilling', indexed_through: -1, target: 99, blocks_remaining: 100 },
      { msg: 'backfilling', indexed_through: 49, target: 99, blocks_per_s: 5, tx_per_s: 10, attributions_per_s: 1.5, blocks_remaining: 50, eta_s: 10,
        rpc: [{ url: 'https://rpc.example/***', state: 'healthy', batch: 10, in_flight: 4, items_per_s: 812 }] },
      { msg: 'caught up with the head', indexed_through: 99, target: 99, blocks: 100, transactions: 200, attributions: 30, seconds: 16, blocks_per_s: 6.3, tx_per_s: 12.5 },
    ])
  })
})
