import { EVERY_CHAIN } from '../db/schema/index.js'
import type { StoredRecord } from '../attribution/records.js'
import type { AttributionRow } from './attribution-columns.js'
import { DAY_MS, HOUR_MS } from './buckets.js'
import type { RangeJob } from './ranges.js'
import { FINAL_REFS } from './final-refs.js'
import type { FinalMembers } from './final-members.js'

/**
 * Every aggregate of a batch of committed ranges, folded in the committing
 * process's memory (issue 40.2): what aggregates.ts computes in SQL per
 * statement, computed here once over the whole batch, so each aggregate row
 * is written once per batch — one upsert per (code, day), not one per
 * attribution row. The bulk commit (bulk-commit.ts) writes the result; the
 * definitions mirror aggregates.ts exactly (sign +1), and
 * test/indexer/bulk-commit.test.ts checks both give the same tables.
 *
 * The folding is the committing process's hot loop on a dense chain (a
 * distinct sender of a code and day is one entry per row there), so it
 * builds no key string: entries sit in nested maps keyed by the row's own
 * strings (whose hashes V8 keeps), and come out as one array per column,
 * the parameters of the bulk commit's `unnest`.
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
  /** The first day a sender window may still read a chain's senders of (rolling-windows.ts: chainSendersReadFrom): none are written for earlier days. */
  chainSendersFromMs: number
  /** The first day that is not history (history-days.ts): a row of an earlier day puts no code sender member in. */
  historyBeforeMs: number
}

/**
 * A window whose start never moves (all time). Final rows put a sender in
 * it once, as presence (final-refs.ts); a window that moves is taken out
 * the days it leaves, so it holds, per member, the sum of the day members
 * behind it (the chain's senders of the day, a code's senders of the day)
 * and a final day member adds FINAL_REFS to it once per day (bulk-commit.ts).
 */
const neverMoves = (window: WindowBound) => window.fromMs === -Infinity

/** Rows of one table to upsert, one array per column (named as the table's columns). */
export type Columns = Record<string, unknown[]>

export type FoldedAggregates = {
  codeDaily: Columns
  codeHourly: Columns
  chainDaily: Columns
  chainHourly: Columns
  /**
   * The distinct scope sets of this batch's members, as the refs tables'
   * JSON (scope → FINAL_REFS); a member's `scope_set` is its 1-based
   * position here, so each set is parsed once per statement, not once per member.
   */
  scopeSets: string[]
  /** Members per (code, day, sender), scopes `registry|chain` (CODE_SCOPE_KEY) in `scope_set`. */
  codeSenderRefs: Columns
  chainSenders: Columns
  codeWindows: Columns
  /**
   * Per (window, sender) of the sender windows that never move (all time),
   * scopes (a chain, or 0) in `scope_set`. The windows that move take their
   * members from the day members the statement makes final (bulk-commit.ts).
   */
  windowSenderRefs: Columns
  /** One stream event per range and code. */
  events: Columns
}

/** The registry namespace a row counts in, as aggregates.ts spells it. */
export function registryOf({ resolution }: AttributionRow): string {
  return resolution.registry ? `${resolution.registry.chainId}:${resolution.registry.address.toLowerCase()}` : 'canonical'
}

type Tree<V> = Map<unknown, V>
const newTree = () => new Map()

/** The branch of `tree` at `key`, made on first use. */
function branch<V>(tree: Tree<V>, key: unknown, make: () => V): V {
  let value = tree.get(key)
  if (value === undefined) tree.set(key, (value = make()))
  return value
}

/** Calls `visit` with every leaf of a tree `depth` maps deep and the keys on its way. */
function eachLeaf(tree: Tree<unknown>, depth: number, visit: (keys: readonly unknown[], leaf: unknown) => void, keys: unknown[] = []): void {
  for (const [key, value] of tree) {
    keys.push(key)
    if (depth === 1) visit(keys, value)
    else eachLeaf(value as Tree<unknown>, depth - 1, visit, keys)
    keys.pop()
  }
}

type CodeTotals = { success: number; reverted: number; suffixGas: number }
type ChainTotals = { attributions: number; success: number; reverted: number }
type WindowTotals = { transactions: number; userOperations: number; reverted: number }
/**
 * The scopes a final row puts its member in (final-refs.ts: presence, no
 * count). Almost every member of a batch meets one registry on one chain,
 * so its scopes are a ScopeSet shared by all such members, JSON included;
 * a member met under two is given a Set of its own.
 */
type ScopeSet = { keys: readonly string[]; id: number; text: string }
type Scopes = ScopeSet | Set<string>

/** A chain's aggregates for one day and hour: what its rows add to while the blocks stay in them. */
type ChainSlot = {
  chainId: number
  dayMs: number
  hourMs: number
  daily: Tree<ChainTotals>
  hourly: Tree<ChainTotals> | undefined
  /** The chain's senders of the day; undefined for a day no sender window reads them of (FoldContext.chainSendersFromMs). */
  senders: Tree<number> | undefined
  /** The chain's scopes in the sender windows, made when a row first falls in one. */
  windowScopes: ScopeSet | undefined
}

/**
 * A code's (in one registry, on one chain) aggregates: its day's and hour's
 * totals and senders and its range's event, each found again only when the
 * rows move to another day, hour or range; its windows' entries made on first use.
 */
type CodeSlot = {
  chainId: number
  scopes: ScopeSet
  dayMs: number
  daily: Tree<CodeTotals>
  /** The code's senders of the day; undefined on a history day (counted from its rows once complete: history-days.ts). */
  senders: Tree<Scopes> | undefined
  hourMs: number
  hourly: Tree<CodeTotals> | undefined
  fromBlock: number
  event: { toBlock: number; attributions: number }
  /** Per code window (`codeWindowBounds`), the totals on this chain and in the every-chain scope. */
  windowTotals: Array<WindowTotals | undefined>
  everyChainWindowTotals: Array<WindowTotals | undefined>
}

/** What one record means to every row of it: its buckets, computed once. */
type RecordBuckets = { day: string; dayMs: number; hour: string | undefined; hourMs: number }

/**
 * A fold over rows given a piece at a time (`add`), so its caller can let
 * its event loop run between pieces: a bulk commit's batch is tens of
 * thousands of rows, folded while another batch's transaction waits on the
 * same loop for its next statement (threaded-store.ts).
 */
export type Folder = {
  /** Folds `rows` of the range `job` (a record's rows in order, as ranges give them; a record may span two calls). */
  add(job: RangeJob, rows: readonly AttributionRow[]): void
  /** What was folded, as one array per column. */
  result(): FoldedAggregates
}

/** What the folder may leave out: members this process already made final (final-members.ts). */
export type FoldOptions = { knownFinal?: Omit<FinalMembers, 'add'> }

const KNOWS_NONE: Omit<FinalMembers, 'add'> = { chainSender: () => false, windowSender: () => false }

export function createFolder(context: FoldContext, { knownFinal = KNOWS_NONE }: FoldOptions = {}): Folder {
  const codeDaily: Tree<Tree<Tree<Tree<Tree<CodeTotals>>>>> = new Map() // code, registry, chain, day, kind
  const codeHourly: Tree<Tree<Tree<Tree<Tree<CodeTotals>>>>> = new Map()
  const chainDaily: Tree<Tree<Tree<ChainTotals>>> = new Map() // chain, day, kind
  const chainHourly: Tree<Tree<Tree<ChainTotals>>> = new Map()
  const codeSenders: Tree<Tree<Tree<Scopes>>> = new Map() // code, day, sender
  const chainSenders: Tree<Tree<Tree<number>>> = new Map() // chain, day, sender
  const codeWindows: Tree<Tree<Tree<Tree<WindowTotals>>>> = new Map() // window, scope, code, registry
  const windowSenders: Tree<Tree<Scopes>> = new Map() // window, sender
  const events: Tree<Tree<Tree<Tree<{ toBlock: number; attributions: number }>>>> = new Map() // chain, from, code, registry
  const scopeSets: Tree<Tree<ScopeSet>> = new Map()
  const windowScopeSets: Tree<ScopeSet> = new Map()
  const sets = createScopeSets()
  const codeWindowBounds = context.windows.filter((w) => w.subject === 'code')
  const openSenderWindows = context.windows.filter((w) => w.subject === 'sender' && neverMoves(w))

  let record: StoredRecord | undefined
  let buckets: RecordBuckets = { day: '', dayMs: 0, hour: undefined, hourMs: 0 }
  let bucketsSeconds = Number.NaN
  // what a chain's rows add to for the block's day and hour, and each code's (codeSlot): found once and reused while
  // they last, instead of walking the nested maps from their roots for every row (the fold is the commit thread's
  // hot loop on a dense chain: ~30 map lookups a row before)
  let chainSlot: ChainSlot | undefined
  const codeSlots: Tree<Tree<CodeSlot>> = new Map() // code, registry

  function chainSlotFor(chainId: number): ChainSlot {
    const { day, dayMs, hour, hourMs } = buckets
    if (chainSlot?.chainId === chainId && chainSlot.dayMs === dayMs && chainSlot.hourMs === hourMs) return chainSlot
    return (chainSlot = {
      chainId,
      dayMs,
      hourMs,
      daily: branch(branch(chainDaily, chainId, newTree), day, newTree),
      hourly: hour === undefined ? undefined : branch(branch(chainHourly, chainId, newTree), hour, newTree),
      senders: dayMs >= context.chainSendersFromMs ? branch(branch(chainSenders, chainId, newTree), day, newTree) : undefined,
      windowScopes: undefined,
    })
  }

  function codeSlotFor(code: string, registry: string, job: RangeJob): CodeSlot {
    const { chainId, fromBlock } = job
    const { day, dayMs, hour, hourMs } = buckets
    const byRegistry = branch(codeSlots, code, newTree)
    let slot = byRegistry.get(registry)
    if (slot?.chainId !== chainId) {
      slot = {
        chainId,
        scopes: codeScopeSet(sets, scopeSets, registry, String(chainId), context.everyChain),
        dayMs: Number.NaN,
        daily: undefined!,
        senders: undefined!,
        hourMs: Number.NaN,
        hourly: undefined,
        fromBlock: Number.NaN,
        event: undefined!,
        windowTotals: codeWindowBounds.map(() => undefined),
        everyChainWindowTotals: codeWindowBounds.map(() => undefined),
      }
      byRegistry.set(registry, slot)
    }
    if (slot.dayMs !== dayMs) {
      slot.dayMs = dayMs
      slot.daily = branch(branch(branch(branch(codeDaily, code, newTree), registry, newTree), chainId, newTree), day, newTree)
      slot.senders = dayMs >= context.historyBeforeMs ? branch(branch(codeSenders, code, newTree), day, newTree) : undefined
    }
    if (slot.hourMs !== hourMs) {
      slot.hourMs = hourMs
      slot.hourly = hour === undefined ? undefined : branch(branch(branch(branch(codeHourly, code, newTree), registry, newTree), chainId, newTree), hour, newTree)
    }
    if (slot.fromBlock !== fromBlock) {
      slot.fromBlock = fromBlock
      slot.event = branch(branch(branch(branch(events, chainId, newTree), fromBlock, newTree), code, newTree), registry, newEvent)
    }
    return slot
  }

  /** A code window's totals for the slot's code on its chain (`everyChain`: in the every-chain scope), made on first use. */
  function windowTotalsOf(slot: CodeSlot, code: string, registry: string, index: number, everyChain: boolean): WindowTotals {
    const held = everyChain ? slot.everyChainWindowTotals : slot.windowTotals
    const totals = held[index]
    if (totals !== undefined) return totals
    const scope = everyChain ? EVERY_CHAIN : slot.chainId
    return (held[index] = branch(branch(branch(branch(codeWindows, codeWindowBounds[index]!.name, newTree), scope, newTree), code, newTree), registry, newWindowTotals))
  }

  function add(job: RangeJob, rows: readonly AttributionRow[]) {
    const chainId = job.chainId
    for (const row of rows) {
      const { code } = row
      const registry = registryOf(row)
      // a record's rows (one per code) come together: its buckets and its once-per-record counts are taken at its first row
      const firstOfRecord = row.record !== record
      if (firstOfRecord) {
        record = row.record
        // a block's records share its time: its buckets are made once (two dates and their text)
        if (record.blockTimestamp !== bucketsSeconds) buckets = bucketsOf((bucketsSeconds = record.blockTimestamp), context.firstKeptHourMs)
      }
      const { hourMs } = buckets
      const rec = record!
      const success = rec.status === 'success'
      const chain = chainSlotFor(chainId)
      const slot = codeSlotFor(code, registry, job)

      addCodeTotals(slot.daily, rec, success)
      addChainTotals(chain.daily, rec.kind, success, firstOfRecord)
      if (slot.hourly !== undefined) addCodeTotals(slot.hourly, rec, success)
      if (chain.hourly !== undefined) addChainTotals(chain.hourly, rec.kind, success, firstOfRecord)

      // a code's sender counts in its registry and in any ('*'), on its chain and (when kept) every chain
      if (slot.senders !== undefined) addScopes(slot.senders, rec.sender, slot.scopes)
      // presence only (final-refs.ts): the count would be written nowhere; a sender this process already made final
      // in these scopes is not asked again (final-members.ts); none on a day no window reads them of
      const daySenders = chain.senders
      if (daySenders !== undefined && !daySenders.has(rec.sender) && !knownFinal.chainSender(chainId, buckets.day, rec.sender)) daySenders.set(rec.sender, 1)

      for (const w of openSenderWindows) {
        const scopes = (chain.windowScopes ??= chainScopeSet(sets, windowScopeSets, String(chainId), context.everyChain))
        if (!knownFinal.windowSender(w, rec.sender, scopes.text)) addScopes(branch(windowSenders, w.name, newTree), rec.sender, scopes)
      }
      for (let i = 0; i < codeWindowBounds.length; i++) {
        const w = codeWindowBounds[i]!
        if (hourMs < w.fromMs || hourMs >= w.untilMs) continue
        addWindowTotals(windowTotalsOf(slot, code, registry, i, false), rec, success)
        if (context.everyChain) addWindowTotals(windowTotalsOf(slot, code, registry, i, true), rec, success)
      }
      slot.event.toBlock = job.toBlock
      slot.event.attributions++
    }
  }
  const setOf = (scopes: Scopes) => [scopes instanceof Set ? sets.idOf([...scopes]) : scopes.id]
  const result = (): FoldedAggregates => ({
    scopeSets: sets.json,
    codeDaily: codeTotalsColumns(codeDaily),
    codeHourly: codeTotalsColumns(codeHourly),
    chainDaily: chainTotalsColumns(chainDaily),
    chainHourly: chainTotalsColumns(chainHourly),
    codeSenderRefs: columnsOf(codeSenders, 3, ['code', 'day', 'sender'], ['scope_set'], setOf),
    chainSenders: columnsOf(chainSenders, 3, ['chain_id', 'day', 'sender'], [], () => []),
    codeWindows: columnsOf(codeWindows, 4, ['window_name', 'scope', 'code', 'registry'], ['transactions', 'user_operations', 'reverted'], (totals: WindowTotals) => [
      totals.transactions,
      totals.userOperations,
      totals.reverted,
    ]),
    windowSenderRefs: columnsOf(windowSenders, 2, ['window_name', 'sender'], ['scope_set'], setOf),
    events: columnsOf(events, 4, ['chain_id', 'from_block', 'code', 'registry'], ['to_block', 'attributions'], (event: { toBlock: number; attributions: number }) => [
      event.toBlock,
      event.attributions,
    ]),
  })
  return { add, result }
}

/** The record's UTC day and hour (the hour only while the hourly tables keep it). */
function bucketsOf(seconds: number, firstKeptHourMs: number): RecordBuckets {
  const ms = seconds * 1000
  const dayMs = Math.floor(ms / DAY_MS) * DAY_MS
  const hourMs = Math.floor(ms / HOUR_MS) * HOUR_MS
  return {
    day: new Date(dayMs).toISOString().slice(0, 10),
    dayMs,
    hour: hourMs >= firstKeptHourMs ? new Date(hourMs).toISOString() : undefined,
    hourMs,
  }
}

/** The batch's distinct scope sets as JSON (each scope at FINAL_REFS), numbered from 1 in order of first use. */
function createScopeSets() {
  const json: string[] = []
  const ids = new Map<string, number>()
  const idOf = (keys: readonly string[]): number => {
    const text = `{${keys.map((key) => `${JSON.stringify(key)}:${FINAL_REFS}`).join(',')}}`
    let id = ids.get(text)
    if (id === undefined) ids.set(text, (id = json.push(text)))
    return id
  }
  const set = (keys: readonly string[]): ScopeSet => {
    const id = idOf(keys)
    return { keys, id, text: json[id - 1]! }
  }
  return { json, idOf, set }
}
type ScopeSets = ReturnType<typeof createScopeSets>

/** A code's sender scopes for a registry and chain: `registry|chain`, `*|chain` and, when kept, the every-chain pair. Made once per batch. */
function codeScopeSet(sets: ScopeSets, byRegistry: Tree<Tree<ScopeSet>>, registry: string, chainScope: string, everyChain: boolean): ScopeSet {
  const byChain = branch(byRegistry, registry, newTree)
  let set = byChain.get(chainScope)
  if (!set) {
    const keys = [`${registry}|${chainScope}`, `*|${chainScope}`]
    if (everyChain) keys.push(`${registry}|${EVERY_CHAIN}`, `*|${EVERY_CHAIN}`)
    byChain.set(chainScope, (set = sets.set(keys)))
  }
  return set
}

/** A window's sender scopes on a chain: the chain and, when kept, every chain. Made once per batch. */
function chainScopeSet(sets: ScopeSets, byChain: Tree<ScopeSet>, chainScope: string, everyChain: boolean): ScopeSet {
  let set = byChain.get(chainScope)
  if (!set) byChain.set(chainScope, (set = sets.set(everyChain ? [chainScope, String(EVERY_CHAIN)] : [chainScope])))
  return set
}

/** Adds `scopes` to `member`'s: the shared set while it is its only one, else a Set of its own. */
function addScopes(members: Tree<Scopes>, member: string, scopes: ScopeSet): void {
  const held = members.get(member)
  if (held === undefined) members.set(member, scopes)
  else if (held === scopes) return
  else if (held instanceof Set) for (const key of scopes.keys) held.add(key)
  else members.set(member, new Set([...held.keys, ...scopes.keys]))
}

const newWindowTotals = (): WindowTotals => ({ transactions: 0, userOperations: 0, reverted: 0 })
const newCodeTotals = (): CodeTotals => ({ success: 0, reverted: 0, suffixGas: 0 })
const newChainTotals = (): ChainTotals => ({ attributions: 0, success: 0, reverted: 0 })
const newEvent = () => ({ toBlock: 0, attributions: 0 })

function addCodeTotals(byKind: Tree<CodeTotals>, record: StoredRecord, success: boolean) {
  const totals = branch(byKind, record.kind, newCodeTotals)
  if (success) totals.success++
  else totals.reverted++
  totals.suffixGas += record.attribution.suffixGas
}

/** A chain's totals count rows, and each transaction or UserOperation once (at its first row). */
function addChainTotals(byKind: Tree<ChainTotals>, kind: string, success: boolean, firstOfRecord: boolean) {
  const totals = branch(byKind, kind, newChainTotals)
  totals.attributions++
  if (!firstOfRecord) return
  if (success) totals.success++
  else totals.reverted++
}


function addWindowTotals(totals: WindowTotals, record: StoredRecord, success: boolean) {
  if (!success) totals.reverted++
  else if (record.kind === 'transaction') totals.transactions++
  else totals.userOperations++
}

/** A tree's leaves as columns: the keys on the way (`keyNames`), then the leaf's own values (`valueNames`, read by `values`). */
function columnsOf<V>(tree: Tree<unknown>, depth: number, keyNames: readonly string[], valueNames: readonly string[], values: (leaf: V) => unknown[]): Columns {
  const keyColumns = keyNames.map((): unknown[] => [])
  const valueColumns = valueNames.map((): unknown[] => [])
  eachLeaf(tree, depth, (keys, leaf) => {
    for (let i = 0; i < keys.length; i++) keyColumns[i]!.push(keys[i])
    const row = values(leaf as V)
    for (let i = 0; i < row.length; i++) valueColumns[i]!.push(row[i])
  })
  return Object.fromEntries([...keyNames.map((name, i) => [name, keyColumns[i]!]), ...valueNames.map((name, i) => [name, valueColumns[i]!])])
}

function codeTotalsColumns(tree: Tree<unknown>): Columns {
  return columnsOf(tree, 5, ['code', 'registry', 'chain_id', 'bucket', 'kind'], ['success_count', 'reverted_count', 'suffix_gas'], (totals: CodeTotals) => [
    totals.success,
    totals.reverted,
    totals.suffixGas,
  ])
}

function chainTotalsColumns(tree: Tree<unknown>): Columns {
  return columnsOf(tree, 3, ['chain_id', 'bucket', 'kind'], ['attributions', 'success_count', 'reverted_count'], (totals: ChainTotals) => [
    totals.attributions,
    totals.success,
    totals.reverted,
  ])
}
