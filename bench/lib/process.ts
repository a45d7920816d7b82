import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'

/**
 * Writes the machine's dirty pages out before a measured run starts, so no
 * run pays for the disk writes another left behind (a dropped bench
 * database forces a PostgreSQL checkpoint whose pages the kernel writes back
 * for seconds after). Outside every clock.
 */
export function flushDirtyPages(): void {
  execFileSync('sync')
}

/** Resident set size and its peak (VmHWM) of a live process, in bytes, from /proc. */
export function memoryOf(pid: number): { rss: number; peak: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024
    return { rss: kib('VmRSS'), peak: kib('VmHWM') }
  } catch {
    return undefined
  }
}

/** Waits for the first stdout line of a child that parses as JSON, failing if the child exits first. */
export function firstJsonLine<T>(child: ChildProcess, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! })
    const timer = setTimeout(() => reject(new Error(`no ready line from pid ${child.pid} within ${timeoutMs} ms`)), timeoutMs)
    const onExit = (code: number | null) => reject(new Error(`process ${child.pid} exited (${code}) before it was ready`))
    child.once('exit', onExit)
    lines.on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as T
        clearTimeout(timer)
        child.off('exit', onExit)
        lines.close()
        resolve(parsed)
      } catch {
        // not the ready line
      }
    })
  })
}

/** Sends SIGTERM, then SIGKILL after `graceMs`, and resolves once the child is gone. */
export async function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}

/** `node --import tsx <script> …args` as a child of this process. */
export function spawnTs(script: string, args: string[], options: { env?: NodeJS.ProcessEnv; nodeArgs?: string[]; inheritStderr?: boolean } = {}) {
  return spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', script, ...args], {
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', options.inheritStderr === false ? 'pipe' : 'inherit'],
  })
}
