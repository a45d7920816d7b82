import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../test/support/services.js'
import { knownPointsBelow } from './blocks.js'
import { firstFlaggedRange, indexedThrough, rangeBoundaryAtOrBelow } from './ranges.js'
import { rollbackAbove } from './rollback.js'

/**
 * `ranges` keeps a row per range for ever: one per block at the tip, and
 * ~800k after a Base-sized backfill. What the follower reads at every head
 * (the highest known point, the first flagged range, the checkpoint) and
 * what a reorg's rollback reads must cost the rows it returns, not the
 * table: each query's plan, taken from the queries these functions send,
 * reads `ranges` through its key, never by a sequential scan.
 */

const CHAIN = 8453
/** 100,000 ranges of 50 blocks, then 2,000 ranges of one block at the tip. */
const HISTORY = 100_000
const TIP_FROM = HISTORY * 50

type Sent = { query: string; parameters: unknown[] }

describe('the follower and rollback reads of a chain with 102,000 ranges', () => {
  let database: TestDatabase
  let watched: postgres.Sql
  const sent: Sent[] = []

  beforeAll(async () => {
    database = await createTestDatabase('ranges_scale')
    const sql = database.db.$client
    await sql`
      insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash, status, done_at)
      select ${CHAIN}, g * 50, g * 50 + 49, 'p' || g, 'p' || (g + 1), 'done', now() from generate_series(0, ${HISTORY - 1}) g`
    await sql`
      insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash, status, done_at)
      select ${CHAIN}, ${TIP_FROM} + g, ${TIP_FROM} + g, case when g = 0 then 'p' || ${HISTORY} else 't' || g end, 't' || (g + 1), 'done', now()
      from generate_series(0, 1999) g`
    await sql`
      insert into blocks (chain_id, number, hash, parent_hash, timestamp, tx_count)
      select ${CHAIN}, ${TIP_FROM} + g, 't' || (g + 1), 't' || g, now(), 1 from generate_series(0, 1999) g`
    await sql`analyze ranges, blocks`
    watched = postgres(database.url, { max: 1, onnotice: () => {}, debug: (_connection, query, parameters) => void sent.push({ query, parameters }) })
  })
  afterAll(async () => {
    await watched?.end({ timeout: 5 })
    await database?.drop()
  })

  /** How each query sent that reads `ranges` reaches it: the plan's node types on that table. */
  async function rangeScansOf(queries: readonly Sent[]): Promise<Array<{ query: string; scans: string[] }>> {
    const reading = queries.filter(({ query }) => /\bfrom ranges\b/.test(query))
    expect(reading.length).toBeGreaterThan(0)
    const plans = []
    for (const { query, parameters } of reading) {
      const [row] = await database.db.$client.unsafe(`explain (format json) ${query}`, parameters as postgres.ParameterOrJSON<never>[])
      plans.push({ query, scans: scansOf((row!['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan) })
    }
    return plans
  }

  /** What `run` sends, planned (rangeScansOf). */
  async function sentBy(run: () => Promise<unknown>): Promise<Sent[]> {
    sent.length = 0
    await run()
    return [...sent]
  }

  const expectKeyReads = (plans: Array<{ query: string; scans: string[] }>) => {
    for (const { query, scans } of plans) {
      expect(scans.length, query).toBeGreaterThan(0)
      expect(scans.filter((scan) => scan === 'Seq Scan'), query).toEqual([])
    }
  }

  it('finds the highest known point below a height through the keys', async () => {
    const plans = await rangeScansOf(await sentBy(async () => {
      expect(await knownPointsBelow(watched, CHAIN, TIP_FROM + 1990, 1)).toEqual([{ number: TIP_FROM + 1990, hash: 't1991' }])
      // the reorg walk's page: the tip's one-block ranges (their ends and parents) and blocks, then history
      const page = await knownPointsBelow(watched, CHAIN, TIP_FROM + 2, 5)
      expect(page.map((point) => point.number)).toEqual([TIP_FROM + 2, TIP_FROM + 1, TIP_FROM, TIP_FROM - 1, TIP_FROM - 51])
    }))
    expectKeyReads(plans)
  })

  it('finds the first flagged range, the checkpoint and a range boundary through the keys', async () => {
    await database.db.$client`update ranges set mismatch_at = now() where chain_id = ${CHAIN} and from_block = ${TIP_FROM + 1500}`
    const plans = await rangeScansOf(await sentBy(async () => {
      expect((await firstFlaggedRange(watched, CHAIN))?.fromBlock).toBe(TIP_FROM + 1500)
      expect(await indexedThrough(watched, CHAIN)).toBe(TIP_FROM + 1999)
      expect(await rangeBoundaryAtOrBelow(watched, CHAIN, 1234, 0)).toBe(1199)
    }))
    expectKeyReads(plans)
  })

  it('rolls back the ranges above an ancestor inside a range, reading them through the key', async () => {
    const reserved = await watched.reserve()
    sent.length = 0
    try {
      // the ancestor inside the last history range: it and every tip range reach above it
      expect((await rollbackAbove(reserved, CHAIN, TIP_FROM - 10)).ranges).toBe(2_001)
    } finally {
      reserved.release()
    }
    const rolled = [...sent]
    const [remaining] = await database.db.$client<{ n: number; top: string }[]>`
      select count(*)::int as n, max(to_block) as top from ranges where chain_id = ${CHAIN}`
    expect(remaining).toEqual({ n: HISTORY - 1, top: String(TIP_FROM - 51) })
    // the same queries planned again on what is left: still through the key
    expectKeyReads(await rangeScansOf(rolled))
  })
})

type PlanNode = { 'Node Type': string; 'Relation Name'?: string; Plans?: PlanNode[] }

/** The node types of a plan that read `ranges`. */
function scansOf(node: PlanNode): string[] {
  const own = node['Relation Name'] === 'ranges' ? [node['Node Type']] : []
  return [...own, ...(node.Plans ?? []).flatMap(scansOf)]
}
