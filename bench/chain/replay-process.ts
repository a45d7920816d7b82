import { fileURLToPath } from 'node:url'
import { firstJsonLine, spawnTs, stopProcess } from '../lib/process.js'
import type { ProfileSpec } from './node-profiles.js'
import type { ReleaseState, ReplayStats } from './replay-server.js'

const serveScript = fileURLToPath(new URL('./serve.ts', import.meta.url))

export type ReplayProcess = {
  url: string
  pid: number
  lastBlock: number
  stats(): Promise<ReplayStats>
  release(options: { head?: number; rate?: number }): Promise<ReleaseState>
  resetStats(): Promise<ReplayStats>
  /** Makes the node answer like another kind of node from now on (node-profiles.ts). */
  setProfile(spec: ProfileSpec): Promise<ProfileSpec>
  stop(): Promise<void>
}

async function control<T>(url: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${url}/__replay/${path}`, {
    method: body === undefined && path === 'stats' ? 'GET' : 'POST',
    ...(body !== undefined && { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  })
  if (!response.ok) throw new Error(`replay control ${path}: HTTP ${response.status}`)
  return (await response.json()) as T
}

/** Starts the replay server for a generated chain in its own process. */
export async function startReplayProcess(options: { dir: string; head?: number; rate?: number }): Promise<ReplayProcess> {
  const args = ['--chain', options.dir]
  if (options.head !== undefined) args.push('--head', String(options.head))
  if (options.rate !== undefined) args.push('--rate', String(options.rate))
  const child = spawnTs(serveScript, args)
  const ready = await firstJsonLine<{ url: string; lastBlock: number }>(child, 60_000)
  return {
    url: ready.url,
    pid: child.pid!,
    lastBlock: ready.lastBlock,
    stats: () => control<ReplayStats>(ready.url, 'stats'),
    release: (release) => control<ReleaseState>(ready.url, 'release', release),
    resetStats: () => control<ReplayStats>(ready.url, 'reset-stats', {}),
    setProfile: (spec) => control<ProfileSpec>(ready.url, 'profile', spec),
    stop: () => stopProcess(child),
  }
}
