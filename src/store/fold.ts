import { EVERY_CHAIN } from '../db/schema/index.js'
import type { AttributionRow } from './attribution-columns.js'
import { DAY_MS, HOUR_MS } from './buckets.js'
import type { RangeResult } from './commit.js'

/**
 * Every aggregate of a batch of committed ranges, folded in the committing
 * process's memory (issue 40.2): what aggregates.ts computes in SQL per
 * statement, computed here once over the whole batch, so each aggregate row
 * is written once per batch — one upsert per (code, day), not one per
 * attribution row. The bulk commit (bulk-commit.ts) writes the result; the
 * definitions mirror aggregates.ts exactly (sign +1), and
 * test/indexer/bulk-commit.test.ts checks both give the same tables.
 */

/** A ready rolling window, as `window_bounds` holds it (ms since the epoch, ±Infinity for open ends). */
export type WindowBound = { name: string; subject: 'code' | 'sender' | 'code-sender'; fromMs: number; untilMs: number }

export type FoldContext = {
  /** Whether the every-chain scope (EVERY_CHAIN) is written too (every-chain.ts). */
  everyChain: boolean
  /** The ready windows, locked by the caller's transaction. */
  windows: readonly WindowBound[]
  /** The first hour kept in the hourly tables, by the database's clock (HOURLY_TOTALS_DAYS). */
  firstKeptHourMs: number
}

type CodeTotals = { code: string; registry: string; chainId: number; bucket: string; kind: string; success: number; reverted: number; suffixGas: number }
type ChainTotals = { chainId: number; bucket: string; kind: string; attributions: number; success: Set<string>; reverted: Set<string> }
type CodeWindow = { window: string; scope: number; code: string; registry: string; transactions: number; userOperations: number; reverted: number }
type Delta<K> = K & { delta: number }

export type FoldedAggregates = {
  codeDaily: CodeTotals[]
  codeHourly: CodeTotals[]
  chainDaily: ChainTotals[]
  chainHourly: ChainTotals[]
  /** A code's sender per day, in each scope `registry|chain` (CODE_SCOPE_KEY). */
  codeSenders: Delta<{ code: string; registry: string; chainId: number; day: string; sender: string }>[]
  chainSenders: Delta<{ chainId: number; day: string; sender: string }>[]
  codeWindows: CodeWindow[]
  windowSenders: Delta<{ window: string; scope: number; sender: string }>[]
  windowCodeSenders: Delta<{ window: string; code: string; registry: string; chainId: number; sender: string }>[]
  /** One stream event per range and code. */
  events: { chainId: number; code: string; registry: string; fromBlock: number; toBlock: number; attributions: number }[]
}

/** The registry namespace a row counts in, as aggregates.ts spells it. */
export function registryOf({ resolution }: AttributionRow): string {
  return resolution.registry ? `${resolution.registry.chainId}:${resolution.registry.address.toLowerCase()}` : 'canonical'
}

const hourIso = (hourMs: number) => new Date(hourMs).toISOString()
const dayIso = (dayMs: number) => new Date(dayMs).toISOString().slice(0, 10)

/** A map from a composite key to an accumulator made on first use. */
function tally<V>() {
  const entries = new Map<string, V>()
  return {
    at(key: string, create: () => V): V {
      let value = entries.get(key)
      if (value === undefined) entries.set(key, (value = create()))
      return value
    },
    values: () => [...entries.values()],
  }
}

export function foldAggregates(results: readonly RangeResult[], context: FoldContext): FoldedAggregates {
  const codeDaily = tally<CodeTotals>()
  const codeHourly = tally<CodeTotals>()
  const chainDaily = tally<ChainTotals>()
  const chainHourly = tally<ChainTotals>()
  const codeSenders = tally<FoldedAggregates['codeSenders'][number]>()
  const chainSenders = tally<FoldedAggregates['chainSenders'][number]>()
  const codeWindows = tally<CodeWindow>()
  const windowSenders = tally<FoldedAggregates['windowSenders'][number]>()
  const windowCodeSenders = tally<FoldedAggregates['windowCodeSenders'][number]>()
  const events = tally<FoldedAggregates['events'][number]>()
  const byHour = context.windows.filter((w) => w.subject !== 'code-sender')
  const byDay = context.windows.filter((w) => w.subject === 'code-sender')

  for (const { job, rows } of results) {
    const chainId = job.chainId
    const scopes = context.everyChain ? [chainId, EVERY_CHAIN] : [chainId]
    for (const row of rows) {
      const { record, code } = row
      const registry = registryOf(row)
      const ms = record.blockTimestamp * 1000
      const hourMs = Math.floor(ms / HOUR_MS) * HOUR_MS
      const dayMs = Math.floor(ms / DAY_MS) * DAY_MS
      const day = dayIso(dayMs)
      const success = record.status === 'success'
      const item = `${record.txHash}:${record.userOpIndex}`
      const sender = record.sender
      const gas = record.attribution.suffixGas

      const addCode = (table: typeof codeDaily, bucket: string) => {
        const totals = table.at(`${code}\0${registry}\0${chainId}\0${bucket}\0${record.kind}`, () => ({ code, registry, chainId, bucket, kind: record.kind, success: 0, reverted: 0, suffixGas: 0 }))
        if (success) totals.success++
        else totals.reverted++
        totals.suffixGas += gas
      }
      const addChain = (table: typeof chainDaily, bucket: string) => {
        const totals = table.at(`${chainId}\0${bucket}\0${record.kind}`, () => ({ chainId, bucket, kind: record.kind, attributions: 0, success: new Set<string>(), reverted: new Set<string>() }))
        totals.attributions++
        ;(success ? totals.success : totals.reverted).add(item)
      }
      addCode(codeDaily, day)
      addChain(chainDaily, day)
      if (hourMs >= context.firstKeptHourMs) {
        const hour = hourIso(hourMs)
        addCode(codeHourly, hour)
        addChain(chainHourly, hour)
      }

      // a code's sender counts in its registry and in any ('*'), on its chain and (when kept) every chain
      for (const scopeRegistry of [registry, '*'])
        for (const scopeChain of scopes) {
          codeSenders.at(`${code}\0${scopeRegistry}\0${scopeChain}\0${day}\0${sender}`, () => ({ code, registry: scopeRegistry, chainId: scopeChain, day, sender, delta: 0 })).delta++
          for (const w of byDay)
            if (dayMs >= w.fromMs && dayMs < w.untilMs)
              windowCodeSenders.at(`${w.name}\0${code}\0${scopeRegistry}\0${scopeChain}\0${sender}`, () => ({ window: w.name, code, registry: scopeRegistry, chainId: scopeChain, sender, delta: 0 })).delta++
        }
      chainSenders.at(`${chainId}\0${day}\0${sender}`, () => ({ chainId, day, sender, delta: 0 })).delta++

      for (const w of byHour) {
        if (hourMs < w.fromMs || hourMs >= w.untilMs) continue
        for (const scope of scopes) {
          if (w.subject === 'sender') {
            windowSenders.at(`${w.name}\0${scope}\0${sender}`, () => ({ window: w.name, scope, sender, delta: 0 })).delta++
            continue
          }
          const totals = codeWindows.at(`${w.name}\0${scope}\0${code}\0${registry}`, () => ({ window: w.name, scope, code, registry, transactions: 0, userOperations: 0, reverted: 0 }))
          if (!success) totals.reverted++
          else if (record.kind === 'transaction') totals.transactions++
          else totals.userOperations++
        }
      }
      events.at(`${chainId}\0${job.fromBlock}\0${code}\0${registry}`, () => ({ chainId, code, registry, fromBlock: job.fromBlock, toBlock: job.toBlock, attributions: 0 })).attributions++
    }
  }
  return {
    codeDaily: codeDaily.values(),
    codeHourly: codeHourly.values(),
    chainDaily: chainDaily.values(),
    chainHourly: chainHourly.values(),
    codeSenders: codeSenders.values(),
    chainSenders: chainSenders.values(),
    codeWindows: codeWindows.values(),
    windowSenders: windowSenders.values(),
    windowCodeSenders: windowCodeSenders.values(),
    events: events.values(),
  }
}
