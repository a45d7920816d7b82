import { and, asc, eq, gte, lte, type SQL } from 'drizzle-orm'
import type { Database } from '../db/client.js'
import { codeDailyTotals } from '../db/schema/index.js'
import { daysOf, type DayWindow } from './window.js'

/** Successful transactions and UserOperations, their sum, the failed ones of both kinds, and suffix gas. */
export type Totals = { transactions: number; userOperations: number; total: number; reverted: number; suffixGas: number }
export type ChainTotals = Totals & { chainId: number }
export type DailyPoint = { day: string; transactions: number; userOperations: number }

export type CodeStats = { totals: Totals; byChain: ChainTotals[]; daily: DailyPoint[] }

type DailyRow = {
  chainId: number
  day: string
  kind: 'transaction' | 'userOperation'
  successCount: number
  revertedCount: number
  suffixGas: number
}

const emptyTotals = (): Totals => ({ transactions: 0, userOperations: 0, total: 0, reverted: 0, suffixGas: 0 })

function addRow(totals: Totals, row: DailyRow) {
  if (row.kind === 'transaction') totals.transactions += row.successCount
  else totals.userOperations += row.successCount
  totals.total += row.successCount
  totals.reverted += row.revertedCount
  totals.suffixGas += row.suffixGas
}

/**
 * Totals, per-chain totals and the zero-filled daily series of one code over
 * a window, read from `code_daily_totals` only. The table holds one row per
 * (code, chain, day, kind), so one indexed range read gives every number.
 */
export async function readCodeStats(
  db: Database,
  query: { code: string; window: DayWindow; chainId?: number },
): Promise<CodeStats> {
  const conditions: SQL[] = [
    eq(codeDailyTotals.code, query.code),
    gte(codeDailyTotals.day, query.window.from),
    lte(codeDailyTotals.day, query.window.to),
  ]
  if (query.chainId !== undefined) conditions.push(eq(codeDailyTotals.chainId, query.chainId))
  const rows: DailyRow[] = await db
    .select({
      chainId: codeDailyTotals.chainId,
      day: codeDailyTotals.day,
      kind: codeDailyTotals.kind,
      successCount: codeDailyTotals.successCount,
      revertedCount: codeDailyTotals.revertedCount,
      suffixGas: codeDailyTotals.suffixGas,
    })
    .from(codeDailyTotals)
    .where(and(...conditions))
    .orderBy(asc(codeDailyTotals.chainId))

  const totals = emptyTotals()
  const byChain = new Map<number, ChainTotals>()
  const daily = new Map<string, DailyPoint>(daysOf(query.window).map((day) => [day, { day, transactions: 0, userOperations: 0 }]))
  for (const row of rows) {
    addRow(totals, row)
    let chain = byChain.get(row.chainId)
    if (!chain) byChain.set(row.chainId, (chain = { chainId: row.chainId, ...emptyTotals() }))
    addRow(chain, row)
    const point = daily.get(row.day)
    if (!point) continue
    if (row.kind === 'transaction') point.transactions += row.successCount
    else point.userOperations += row.successCount
  }
  return { totals, byChain: [...byChain.values()], daily: [...daily.values()] }
}
