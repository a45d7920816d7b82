/**
 * Self time by function in a V8 `.cpuprofile` (written by `--cpu-prof`), the
 * quickest way to see where a bench spends its time without a browser:
 * `node --import tsx bench/profile-top.ts <file.cpuprofile> [rows] [fromUs:toUs]`.
 *
 * The optional window keeps only samples taken between two readings of the
 * monotonic clock (`process.hrtime.bigint() / 1000n`, the clock V8 stamps
 * profiles with): the http bench records one window per scenario, so one
 * profile of the service splits into one profile per scenario.
 */
import { readFileSync } from 'node:fs'
import { printTable } from './lib/report.js'

type ProfileNode = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
type Profile = { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] }

export function selfTimes(profile: Profile, window?: { fromUs: number; toUs: number }): Array<{ frame: string; ms: number; share: number }> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const totals = new Map<string, number>()
  let all = 0
  let at = profile.startTime
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0
    if (window && (at < window.fromUs || at > window.toUs)) return
    const node = byId.get(id)!
    const { functionName, url, lineNumber } = node.callFrame
    const file = url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, '').replace(/^.*\/work\/main\//, '')
    const frame = `${functionName || '(anonymous)'} ${file ? `${file}:${lineNumber + 1}` : ''}`.trim()
    const delta = (profile.timeDeltas[i] ?? 0) / 1000
    all += delta
    totals.set(frame, (totals.get(frame) ?? 0) + delta)
  })
  return [...totals.entries()]
    .map(([frame, ms]) => ({ frame, ms, share: ms / all }))
    .sort((a, b) => b.ms - a.ms)
}

const [file, rows = '25', range] = process.argv.slice(2)
if (file) {
  const [fromUs, toUs] = (range ?? '').split(':').map(Number)
  const window = range ? { fromUs: fromUs!, toUs: toUs! } : undefined
  const top = selfTimes(JSON.parse(readFileSync(file, 'utf8')) as Profile, window).slice(0, Number(rows))
  printTable(`self time in ${file}`, ['function', 'ms', 'share'], top.map((t) => [t.frame, t.ms.toFixed(1), `${(t.share * 100).toFixed(1)}%`]))
}
