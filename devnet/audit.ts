import { createAnalytics } from '../src/analytics/analytics.js'
import { MAX_LEADERBOARD_LIMIT } from '../src/analytics/leaderboard.js'
import { MAX_WINDOW_DAYS } from '../src/analytics/window.js'
import { addDays, dayOf } from '../src/store/buckets.js'
import type { Database } from '../src/db/client.js'
import { indexedThrough } from '../src/store/ranges.js'
import type { Logger } from '../src/logger.js'
import { createRegistry } from '../src/registry/register.js'
import { totalsByCode, type CodeTotals, type GroundTruth } from './ledger.js'

const AUDIT_INTERVAL_MS = 30_000

type Served = { byCode: Record<string, CodeTotals>; leaderboard: Record<string, number>; leaderboardComplete: boolean }

/**
 * What the API serves for the codes the devnet sent: each code's totals
 * from the analytics endpoint's read path (all of its registries, the
 * longest window) and the all-time leaderboard (invalid codes included).
 */
async function servedTotals(analytics: ReturnType<typeof createAnalytics>, chainId: number, codes: readonly string[]): Promise<Served> {
  const today = dayOf(new Date())
  const window = { from: addDays(today, -(MAX_WINDOW_DAYS - 1)), to: today, chainId }
  const byCode: Record<string, CodeTotals> = {}
  for (const code of codes) {
    const { totals } = await analytics.codeAnalytics(code, window)
    if (totals.transactions + totals.userOperations + totals.reverted + totals.suffixGas === 0) continue
    byCode[code] = { transactions: totals.transactions, userOperations: totals.userOperations, reverted: totals.reverted, suffixGas: totals.suffixGas }
  }
  const board = await analytics.leaderboard({ window: 'all', chainId, limit: MAX_LEADERBOARD_LIMIT, includeInvalid: true })
  const leaderboard: Record<string, number> = {}
  // one entry per code and registry namespace: a code's total is their sum
  for (const entry of board.entries) leaderboard[entry.code] = (leaderboard[entry.code] ?? 0) + entry.total
  return { byCode, leaderboard, leaderboardComplete: board.entries.length < MAX_LEADERBOARD_LIMIT }
}

/** Blocks of the ranges done so far, as a fingerprint: totals read between two equal fingerprints belong to exactly these blocks. */
async function doneRanges(db: Database, chainId: number): Promise<Array<{ from: number; to: number }>> {
  const rows = await db.$client<{ from_block: string; to_block: string }[]>`
    select from_block, to_block from ranges where chain_id = ${chainId} and status = 'done' order by from_block`
  return rows.map((row) => ({ from: Number(row.from_block), to: Number(row.to_block) }))
}

function differences(expected: Record<string, CodeTotals>, served: Served): string[] {
  const out: string[] = []
  for (const code of new Set([...Object.keys(expected), ...Object.keys(served.byCode)])) {
    const e = JSON.stringify(expected[code] ?? null)
    const a = JSON.stringify(served.byCode[code] ?? null)
    if (e !== a) out.push(`${code}: sent ${e}, analytics serves ${a}`)
  }
  const leaderboardCodes = served.leaderboardComplete ? new Set([...Object.keys(expected), ...Object.keys(served.leaderboard)]) : Object.keys(served.leaderboard)
  for (const code of leaderboardCodes) {
    const sent = expected[code] ? expected[code].transactions + expected[code].userOperations : 0
    const listed = served.leaderboard[code] ?? 0
    if (sent !== listed) out.push(`${code}: sent ${sent} successful, leaderboard serves ${listed}`)
  }
  return out
}

/**
 * Every 30 s, compares what the devnet's traffic generator mined in the
 * blocks indexed so far with the totals the API serves (the analytics and
 * leaderboard read paths, not the attribution rows), and logs the verdict:
 * the newcomer's proof that the numbers users read are exact.
 */
export function startDevnetAudit({ db, chainId, truth, logger }: { db: Database; chainId: number; truth: () => GroundTruth; logger: Logger }) {
  const log = logger.child({ component: 'devnet-audit', chain_id: chainId })
  const timer = setInterval(() => {
    audit().catch((error) => log.warn({ err: (error as Error).message }, 'devnet audit could not run'))
  }, AUDIT_INTERVAL_MS)
  timer.unref()

  const analytics = createAnalytics({ db, registry: createRegistry({ db }), explorerOf: () => undefined })

  async function audit() {
    const through = await indexedThrough(db.$client, chainId)
    if (through === undefined) return
    const sent = truth()
    const codes = [...new Set(sent.attributions.map((row) => row.code))]
    // ranges commit with their totals: read the totals between two equal views of the done ranges
    let ranges = await doneRanges(db, chainId)
    let served: Served | undefined
    for (let attempt = 0; attempt < 5 && !served; attempt++) {
      const read = await servedTotals(analytics, chainId, codes)
      const after = await doneRanges(db, chainId)
      if (JSON.stringify(after) === JSON.stringify(ranges)) served = read
      ranges = after
    }
    if (!served) return log.info('devnet audit skipped: ranges kept committing while it read')
    const counted = (block: number) => ranges.some((range) => range.from <= block && block <= range.to)
    const inIndex = sent.attributions.filter((row) => counted(row.blockNumber))
    const expected = totalsByCode({ ...sent, attributions: inIndex })
    const mismatches = differences(expected, served)
    const summary = { indexed_through: through, codes: Object.keys(expected).length, attributions: inIndex.length }
    if (mismatches.length === 0) log.info(summary, 'devnet ground truth equals the index')
    else log.error({ ...summary, mismatches: mismatches.slice(0, 10) }, 'devnet ground truth differs from the index')
  }

  return { stop: () => clearInterval(timer), audit }
}
