/**
 * Calls of several callers asked together, as a database commits in
 * groups: while one group's ask is out, whatever callers bring meanwhile
 * waits and goes out as the next group, in one ask. Nothing waits on a
 * timer: a caller alone is asked at once, and a group is as large as what
 * arrived during the ask before it, so the slower the node answers, the
 * fuller each request.
 *
 * For a node that caps the requests in flight (batches.ts): there every
 * request is a round trip that holds one of its few slots, and a backfill's
 * ranges each asking their candidates' receipts alone spent as many
 * requests on receipts as on blocks (the capped bench node: ~30 receipts
 * requests of ~200 calls for 1,000 blocks, where a plain client sends 5).
 *
 * A group's ask that fails is asked again caller by caller, each with its
 * own calls only: one caller's trouble (a receipt of another block after a
 * reorg, a call that keeps failing) stays its own, as before grouping.
 */
export function createAskGroups<Item, Result>(options: {
  /** One ask for the calls of a whole group, results in the same order. */
  ask: (items: readonly Item[]) => Promise<Result[]>
  /** One caller's own calls, after its group's ask failed. */
  alone: (items: readonly Item[]) => Promise<Result[]>
}) {
  type Member = { items: readonly Item[]; resolve: (results: Result[]) => void; reject: (error: unknown) => void }
  let out = false
  let next: Member[] = []

  async function run(members: Member[]): Promise<void> {
    out = true
    try {
      const items = members.flatMap((member) => member.items)
      let results: Result[]
      try {
        results = await options.ask(items)
      } catch (error) {
        // a caller alone: its own ask failed, and asked again alone it would only fail twice
        if (members.length === 1) return members[0]!.reject(error)
        await Promise.all(members.map((member) => options.alone(member.items).then(member.resolve, member.reject)))
        return
      }
      let at = 0
      for (const member of members) {
        member.resolve(results.slice(at, at + member.items.length))
        at += member.items.length
      }
    } finally {
      out = false
      // what arrived meanwhile goes now, as one group
      const waiting = next
      next = []
      if (waiting.length > 0) void run(waiting)
    }
  }

  return {
    /** The results of `items`, in order: asked at once if no group is out, else with the next group. */
    ask(items: readonly Item[]): Promise<Result[]> {
      if (items.length === 0) return Promise.resolve([])
      return new Promise<Result[]>((resolve, reject) => {
        const member = { items, resolve, reject }
        if (out) next.push(member)
        else void run([member])
      })
    },
  }
}
