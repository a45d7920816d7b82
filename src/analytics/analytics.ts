import { registryLabel } from '../contract/schemas.js'
import type { Database } from '../db/client.js'
import type { Registry } from '../registry/register.js'
import { listCodeAttributions, type AttributionListQuery, type ExplorerLookup } from './attributions.js'
import { readCodeHourly, readCodeStats, type CodeStats, type HourlyWindow } from './code-stats.js'
import { readLeaderboard, type Leaderboard, type LeaderboardQuery } from './leaderboard.js'
import { readSummary, type SummaryWindow } from './summary.js'
import { createReadCache, type ReadCache } from './read-cache.js'
import { resolveDayWindow } from './window.js'
import { createRollingWindows, type RollingWindows } from '../store/rolling-windows.js'

export type CodeAnalytics = CodeStats & { code: string; registry?: string; registered: boolean; from: string; to: string }

/** The namespace a code's answer was asked for, as answers spell it; nothing when every namespace is added together. */
const registryEcho = (registry: string | undefined) => (registry === undefined ? {} : { registry: registryLabel(registry) })

/**
 * Read side of the analytics. Everything here reads the aggregate tables
 * (code and chain totals by day and hour, unique senders) or walks an index
 * of the attribution rows one page at a time, never scans them, so a request
 * costs the same however busy a code is.
 */
export function createAnalytics({
  db,
  registry,
  explorerOf,
  windows = createRollingWindows(db.$client),
  cache = createReadCache({ ttlMs: 0 }),
}: {
  db: Database
  registry: Pick<Registry, 'findByCode'>
  explorerOf: ExplorerLookup
  /** The rolling windows the reads move first (the server's, which it also keeps moved in the background). */
  windows?: RollingWindows
  /** Remembers window-wide answers until the next commit; off (ttl 0) unless given. */
  cache?: ReadCache
}) {
  // the key is the question; `now` only appears in tests, which pass it to get exact windows
  const cached = <T>(name: string, query: object, load: () => Promise<T>) =>
    'now' in query && query.now !== undefined ? load() : cache.get(`${name} ${JSON.stringify(query)}`, load)

  /** Throws InvalidWindowError for a window that is malformed, reversed or too long. */
  async function codeAnalytics(
    code: string,
    query: { from?: string; to?: string; chainId?: number; registry?: string; now?: Date } = {},
  ): Promise<CodeAnalytics> {
    const window = resolveDayWindow(query, query.now)
    return cached('code', { code, ...query, ...window }, async () => {
      const [stats, registered] = await Promise.all([
        readCodeStats(db, windows, { code, window, chainId: query.chainId, registry: query.registry, now: query.now }),
        registry.findByCode(code),
      ])
      return { code, ...registryEcho(query.registry), registered: registered !== undefined, ...stats, from: window.from, to: window.to }
    })
  }

  async function codeHourly(code: string, query: { window: HourlyWindow; chainId?: number; registry?: string; now?: Date }) {
    return { code, ...registryEcho(query.registry), window: query.window, ...(await readCodeHourly(db.$client, { code, ...query })) }
  }

  const leaderboard = (query: LeaderboardQuery): Promise<Leaderboard> => cached('leaderboard', query, () => readLeaderboard(windows, query))
  const summary = (query: { window: SummaryWindow; chainId?: number; now?: Date }) => cached('summary', query, () => readSummary(windows, query))
  const attributions = (query: AttributionListQuery) => listCodeAttributions(db.$client, query, explorerOf)

  return { codeAnalytics, codeHourly, leaderboard, summary, attributions }
}

export type Analytics = ReturnType<typeof createAnalytics>
