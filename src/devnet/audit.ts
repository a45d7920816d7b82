import type { Database } from '../db/client.js'
import { indexedThrough } from '../follower/ranges.js'
import type { Logger } from '../logger.js'
import { totalsByCode, type CodeTotals, type GroundTruth } from './ledger.js'

const AUDIT_INTERVAL_MS = 30_000

async function indexTotals(db: Database, chainId: number, through: number): Promise<Record<string, CodeTotals>> {
  // the audit may read attribution rows: it is a devnet self-check, not an analytics path
  const rows = await db.$client<{ code: string; kind: string; status: string; n: number; gas: string }[]>`
    select code, kind, status, count(*)::int as n, sum(suffix_gas) as gas
    from attributions where chain_id = ${chainId} and block_number <= ${through}
    group by code, kind, status`
  const totals: Record<string, CodeTotals> = {}
  for (const row of rows) {
    const entry = (totals[row.code] ??= { transactions: 0, userOperations: 0, reverted: 0, suffixGas: 0 })
    if (row.status === 'reverted') entry.reverted += row.n
    else if (row.kind === 'transaction') entry.transactions += row.n
    else entry.userOperations += row.n
    entry.suffixGas += Number(row.gas)
  }
  return totals
}

function differences(expected: Record<string, CodeTotals>, actual: Record<string, CodeTotals>): string[] {
  const codes = new Set([...Object.keys(expected), ...Object.keys(actual)])
  const out: string[] = []
  for (const code of codes) {
    const e = JSON.stringify(expected[code] ?? null)
    const a = JSON.stringify(actual[code] ?? null)
    if (e !== a) out.push(`${code}: sent ${e}, indexed ${a}`)
  }
  return out
}

/**
 * Every 30 s, compares what the devnet's traffic generator mined (up to the
 * indexed block) with what the index counted, and logs the verdict: the
 * newcomer's proof that the numbers are exact.
 */
export function startDevnetAudit({ db, chainId, truth, logger }: { db: Database; chainId: number; truth: () => GroundTruth; logger: Logger }) {
  const log = logger.child({ component: 'devnet-audit', chain_id: chainId })
  const timer = setInterval(() => {
    audit().catch((error) => log.warn({ err: (error as Error).message }, 'devnet audit could not run'))
  }, AUDIT_INTERVAL_MS)
  timer.unref()

  async function audit() {
    const through = await indexedThrough(db.$client, chainId)
    if (through === undefined) return
    const sent = truth()
    const expected = totalsByCode({ ...sent, attributions: sent.attributions.filter((row) => row.blockNumber <= through) })
    const mismatches = differences(expected, await indexTotals(db, chainId, through))
    const summary = { indexed_through: through, codes: Object.keys(expected).length, attributions: sent.attributions.filter((r) => r.blockNumber <= through).length }
    if (mismatches.length === 0) log.info(summary, 'devnet ground truth equals the index')
    else log.error({ ...summary, mismatches: mismatches.slice(0, 10) }, 'devnet ground truth differs from the index')
  }

  return { stop: () => clearInterval(timer), audit }
}
