/**
 * Answers for window-wide analytics (summary, leaderboard, a code's totals),
 * kept until the next commit or rollback notification or `ttlMs`, whichever
 * comes first. Those queries aggregate thousands of aggregate rows; a
 * dashboard asks the same few questions over and over between commits.
 * Concurrent misses for one key share one query (single flight).
 */
export function createReadCache({ ttlMs, maxEntries = 1_000 }: { ttlMs: number; maxEntries?: number }) {
  const entries = new Map<string, { expires: number; value: Promise<unknown>; generation: number }>()
  let generation = 0

  function get<T>(key: string, load: () => Promise<T>): Promise<T> {
    if (ttlMs <= 0) return load()
    const now = Date.now()
    const hit = entries.get(key)
    if (hit && hit.expires > now && hit.generation === generation) return hit.value as Promise<T>
    if (entries.size >= maxEntries) entries.clear()
    const value = load()
    const entry = { expires: now + ttlMs, value, generation }
    entries.set(key, entry)
    // a failed query is not remembered
    value.catch(() => {
      if (entries.get(key) === entry) entries.delete(key)
    })
    return value
  }

  /** Something committed or rolled back: every remembered answer may be out of date. */
  function invalidate() {
    generation += 1
    entries.clear()
  }

  return { get, invalidate }
}

export type ReadCache = ReturnType<typeof createReadCache>
