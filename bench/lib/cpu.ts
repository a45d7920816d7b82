import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import type postgres from 'postgres'

/**
 * Where a run's CPU seconds went, process by process, read from /proc (user
 * + system time): the indexer (daemon), the PostgreSQL backends serving the
 * bench's database (all of them together; the server is shared with other
 * work, so only those connected to this database count), the replay node
 * and the bench process itself. Backends come and go, so the meter is
 * sampled during the run and keeps the last figure seen for each.
 */
export type CpuSeconds = {
  daemon: number
  /** Of `daemon`, its main thread's: the one JavaScript thread, which caps the indexer however many cores are free. */
  daemonMainThread: number
  /** Time the main thread was ready to run but waited for a core (schedstat): what the other processes took from it. */
  daemonMainThreadWaited: number
  postgres: number
  node: number
  bench: number
  /** Wall time between start() and stop(). */
  windowSeconds: number
}

const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100

/** CPU seconds a live process (or, given `thread`, one of its threads) has spent so far, or undefined once it is gone. */
export function cpuSecondsOf(pid: number, thread?: number): number | undefined {
  try {
    const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8')
    // the command name may hold spaces: the fields start after its closing parenthesis
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond
  } catch {
    return undefined
  }
}

/** Seconds a thread has waited on a run queue so far (the second field of its schedstat), or undefined once it is gone. */
export function runQueueSecondsOf(pid: number, thread: number): number | undefined {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${thread}/schedstat`, 'utf8').split(' ')[1]) / 1e9
  } catch {
    return undefined
  }
}

const ownCpuSeconds = () => {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1e6
}

export function createCpuMeter(options: { daemonPid: number; nodePid: number; sql: postgres.Sql; databaseName: string }) {
  const atStart = new Map<number, number>()
  const lastSeen = new Map<number, number>()
  // a process's main thread has the process's id as its thread id
  const mainThread = { atStart: 0, lastSeen: 0, waitedAtStart: 0, waitedLastSeen: 0 }
  let startedAt = 0
  const backends = new Set<number>()
  let benchAtStart = 0
  let benchAtEnd = 0

  async function backendPids(): Promise<number[]> {
    const rows = await options.sql<Array<{ pid: number }>>`
      select pid from pg_stat_activity where datname = ${options.databaseName} and pid <> pg_backend_pid()`
    return rows.map((row) => row.pid)
  }

  function see(pid: number, start: boolean) {
    const seconds = cpuSecondsOf(pid)
    if (seconds === undefined) return
    if (start) atStart.set(pid, seconds)
    lastSeen.set(pid, seconds)
  }

  async function look(start: boolean) {
    for (const pid of await backendPids()) backends.add(pid)
    for (const pid of [options.daemonPid, options.nodePid, ...backends]) see(pid, start)
    const main = cpuSecondsOf(options.daemonPid, options.daemonPid)
    const waited = runQueueSecondsOf(options.daemonPid, options.daemonPid)
    if (main === undefined || waited === undefined) return
    if (start) Object.assign(mainThread, { atStart: main, waitedAtStart: waited })
    Object.assign(mainThread, { lastSeen: main, waitedLastSeen: waited })
  }

  const spent = (pid: number) => (lastSeen.get(pid) ?? 0) - (atStart.get(pid) ?? 0)

  return {
    async start() {
      benchAtStart = ownCpuSeconds()
      startedAt = performance.now()
      await look(true)
    },
    /** Call now and then during the run: a backend that exits keeps the figure of its last sample. */
    sample: () => look(false),
    async stop(): Promise<CpuSeconds> {
      await look(false)
      benchAtEnd = ownCpuSeconds()
      let postgresSeconds = 0
      for (const pid of backends) postgresSeconds += spent(pid)
      return {
        daemon: spent(options.daemonPid),
        daemonMainThread: mainThread.lastSeen - mainThread.atStart,
        daemonMainThreadWaited: mainThread.waitedLastSeen - mainThread.waitedAtStart,
        postgres: postgresSeconds,
        node: spent(options.nodePid),
        bench: benchAtEnd - benchAtStart,
        windowSeconds: (performance.now() - startedAt) / 1000,
      }
    },
  }
}
