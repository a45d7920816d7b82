import { spawn, type ChildProcess } from 'node:child_process'

/**
 * A shell that holds the read end of a pipe from this process and kills
 * `pid` (or its whole process group) when the pipe closes. The pipe closes
 * however this process ends, SIGKILL included, which no `exit` handler can
 * see; so no test run or crashed daemon leaves a child behind holding a port.
 */
export function startOrphanGuard(pid: number, { group = false }: { group?: boolean } = {}): ChildProcess | undefined {
  if (process.platform === 'win32') return undefined
  // a negative pid names the process group; no `--`, which dash's kill refuses
  const target = group ? '-$1' : '$1'
  const guard = spawn('/bin/sh', ['-c', `while read -r _; do :; done; kill -9 "${target}" 2>/dev/null`, 'orphan-guard', String(pid)], {
    stdio: ['pipe', 'ignore', 'ignore'],
  })
  guard.on('error', () => {})
  guard.stdin?.on('error', () => {})
  // the guard must not keep this process alive
  guard.unref()
  ;(guard.stdin as unknown as { unref?: () => void } | null)?.unref?.()
  return guard
}
