/** A window as its members were made final under it (fold.ts's WindowBound, which this module does not import: fold.ts imports it). */
type WindowBound = { name: string; fromMs: number; untilMs: number }
type Columns = Record<string, unknown[]>

/**
 * The senders this process has made final in the distinct-sender tables
 * keyed by sender alone (final-refs.ts) — a chain's sender of a day, a
 * window's sender — so the next bulk batches leave them out instead of
 * asking the tables again.
 *
 * A dense chain's batches meet most of these again: a day has a few tens
 * of thousands of senders, the all-time window the same senders for ever,
 * and each was a primary-key lookup and a JSON read in the aggregate
 * statement, only to find it already final (bench/LOG.md). A code's sender
 * is not remembered: on a chain with a long tail of codes nearly every
 * (code, sender) pair is new, and remembering them cost the committing
 * thread more (~5 µs a row, map lookups in a table of 200k) than the
 * lookups it saved.
 *
 * What this remembers cannot go stale:
 * - a member is remembered only once the commit that made it final has
 *   committed, and under the scopes it was made final in (its scope set's
 *   JSON, fold.ts): a row whose member has other scopes (another registry,
 *   the every-chain scope kept or dropped) is asked again;
 * - a final member never leaves a day (a final row is never removed; a tip
 *   rollback takes out only its own counts, final-refs.ts);
 * - a window's members are those of the all-time windows alone (the
 *   others take theirs from the day members, fold.ts neverMoves), kept with
 *   the bounds they were made final under and forgotten when the window is
 *   seen with others.
 * A member made final by another process is not known here and is looked
 * up as before.
 *
 * Bounded: the most recent `daysKept` days (a backfill moves forward
 * through days; the ranges in flight span one or two), and at most
 * `membersKept` members a table, forgotten all at once past it.
 */
export type FinalMembers = {
  chainSender(chainId: number, day: string, sender: string): boolean
  /** `scopes`: the scope set's JSON the row would write (fold.ts). */
  windowSender(window: WindowBound, sender: string, scopes: string): boolean
  /** Remembers a committed batch's members, folded under `windows` (the folded columns, fold.ts). */
  add(batch: BatchMembers, windows: readonly WindowBound[]): void
}

/** A committed batch's members as fold.ts gives them: one array per column, `scope_set` numbering `scopeSets` from 1. */
export type BatchMembers = { scopeSets: readonly string[]; chainSenders: Columns; windowSenderRefs: Columns }

const DAYS_KEPT = 3
const MEMBERS_KEPT = 200_000

type Tree = Map<unknown, unknown>
type WindowMembers = { fromMs: number; untilMs: number; members: Tree }

export function createFinalMembers({ daysKept = DAYS_KEPT, membersKept = MEMBERS_KEPT } = {}): FinalMembers {
  const chainSenders = createDayMembers(daysKept, membersKept) // day, chain, sender → true
  const windowSenders = createWindowMembers(membersKept) // window, sender → scopes

  return {
    chainSender: (chainId, day, sender) => chainSenders.get(day, chainId, sender) === true,
    windowSender: (window, sender, scopes) => windowSenders.of(window)?.get(sender) === scopes,
    add(batch, windows) {
      {
        const { chain_id, day, sender } = batch.chainSenders
        for (let i = 0; i < sender!.length; i++) chainSenders.set(day![i] as string, chain_id![i], sender![i], true)
      }
      const byName = new Map(windows.map((window) => [window.name, window]))
      const { window_name, sender, scope_set } = batch.windowSenderRefs
      for (let i = 0; i < sender!.length; i++)
        windowSenders.set(byName.get(window_name![i] as string)!, sender![i], batch.scopeSets[(scope_set![i] as number) - 1])
    },
  }
}

/** The branch of `tree` at `key`, made on first use. */
function branch(tree: Tree, key: unknown): Tree {
  let value = tree.get(key) as Tree | undefined
  if (value === undefined) tree.set(key, (value = new Map()))
  return value
}

/** Members by day (ISO date: ordered as text), then two keys: the most recent days kept, at most `membersKept` members. */
function createDayMembers(daysKept: number, membersKept: number) {
  const days = new Map<string, Tree>()
  let size = 0
  return {
    get: (day: string, key: unknown, member: unknown) => (days.get(day)?.get(key) as Tree | undefined)?.get(member),
    set(day: string, key: unknown, member: unknown, value: unknown) {
      let members = days.get(day)
      if (members === undefined) {
        // a late range of a day older than every kept one is not kept
        if (days.size >= daysKept && [...days.keys()].every((kept) => kept > day)) return
        days.set(day, (members = new Map()))
        if (days.size > daysKept) days.delete([...days.keys()].sort()[0]!)
      }
      const byKey = branch(members, key)
      if (!byKey.has(member)) size++
      byKey.set(member, value)
      if (size > membersKept) {
        days.clear()
        size = 0
      }
    },
  }
}

/** Members by window, kept with the bounds they were made final under: a window seen with other bounds has none. */
function createWindowMembers(membersKept: number) {
  const windows = new Map<string, WindowMembers>()
  let size = 0
  const of = (window: WindowBound): Tree | undefined => {
    const kept = windows.get(window.name)
    return kept && kept.fromMs === window.fromMs && kept.untilMs === window.untilMs ? kept.members : undefined
  }
  function membersOf(window: WindowBound): Tree {
    let kept = windows.get(window.name)
    if (!kept || kept.fromMs !== window.fromMs || kept.untilMs !== window.untilMs) {
      windows.set(window.name, (kept = { fromMs: window.fromMs, untilMs: window.untilMs, members: new Map() }))
    }
    return kept.members
  }
  function counted(tree: Tree, member: unknown, value: unknown) {
    if (!tree.has(member)) size++
    tree.set(member, value)
    if (size > membersKept) {
      windows.clear()
      size = 0
    }
  }
  return { of, set: (window: WindowBound, member: unknown, value: unknown) => counted(membersOf(window), member, value) }
}
