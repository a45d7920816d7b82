import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import postgres from 'postgres'
import { freePort } from '../../../devnet/free-port.js'

/**
 * A private PostgreSQL server for fault tests: initdb into a temp dir, a
 * random port, trust auth, its unix socket inside the temp dir. Tests stop,
 * crash and restart it without touching the machine's shared server.
 */
export type PostgresCluster = {
  port: number
  dataDir: string
  /** URL of database `name` on this server. */
  url(name: string): string
  /** Fast shutdown (SIGINT): sessions are disconnected, data checkpointed. */
  stop(): Promise<void>
  /** kill -9 of the postmaster and every backend: a crash; the next start runs crash recovery. */
  kill(): Promise<void>
  start(): Promise<void>
  running(): boolean
  /** Stops the server and removes its data directory. */
  destroy(): Promise<void>
}

/** The newest installed PostgreSQL's bin directory (PG_BIN overrides). */
function postgresBinDir(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a))
    if (versions[0]) return join(root, versions[0], 'bin')
  }
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  } catch {
    throw new Error('PostgreSQL server binaries not found: install postgresql or set PG_BIN')
  }
}

/** initdb and postgres refuse to run as root: run them as the `postgres` system user then. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
  return { uid, gid }
}

const SERVER_SETTINGS = [
  'listen_addresses=127.0.0.1',
  // every role process holds a pool; the crash trials run several at once
  'max_connections=300',
  // the tests crash processes, not the machine: flushing to disk buys nothing here (the OS keeps what was
  // written). Commits stay synchronous: an acknowledged commit must survive kill -9, as in production
  'fsync=off',
  'full_page_writes=off',
  'shared_buffers=64MB',
  'log_min_messages=fatal',
]

export async function startPostgresCluster(): Promise<PostgresCluster> {
  const bin = postgresBinDir()
  const user = serverUser()
  const root = mkdtempSync(join(tmpdir(), 'faults-pg-'))
  const dataDir = join(root, 'data')
  if (user) chownSync(root, user.uid, user.gid)
  execFileSync(join(bin, 'initdb'), ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'], {
    stdio: 'ignore',
    ...user,
  })
  const port = await freePort()
  let server: ChildProcess | undefined

  async function answers(): Promise<boolean> {
    const probe = postgres({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres', max: 1, connect_timeout: 1, onnotice: () => {} })
    try {
      await probe`select 1`
      return true
    } catch {
      return false
    } finally {
      await probe.end({ timeout: 1 }).catch(() => {})
    }
  }

  async function start() {
    if (server) return
    const args = ['-D', dataDir, '-p', String(port), '-k', root, ...SERVER_SETTINGS.flatMap((setting) => ['-c', setting])]
    // its own process group, so a crash can take the postmaster and every backend at once
    const child = spawn(join(bin, 'postgres'), args, { stdio: 'ignore', detached: true, ...user })
    server = child
    child.once('exit', () => {
      if (server === child) server = undefined
    })
    for (let attempt = 0; attempt < 200; attempt++) {
      if (await answers()) return
      if (server !== child) throw new Error(`postgres exited while starting (data dir ${dataDir})`)
      await sleep(100)
    }
    throw new Error(`postgres did not accept connections on port ${port}`)
  }

  async function waitForExit(child: ChildProcess) {
    if (child.exitCode !== null || child.signalCode !== null) return
    await new Promise((resolve) => child.once('exit', resolve))
  }

  async function stop() {
    const child = server
    if (!child) return
    child.kill('SIGINT')
    await waitForExit(child)
    server = undefined
  }

  async function kill() {
    const child = server
    if (!child) return
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      child.kill('SIGKILL')
    }
    await waitForExit(child)
    server = undefined
    // backends die with their group; give the kernel a moment to release shared memory before a restart
    await sleep(200)
  }

  await start()
  process.once('exit', () => {
    if (server?.pid) {
      try {
        process.kill(-server.pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
  })

  return {
    port,
    dataDir,
    url: (name) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    stop,
    kill,
    start,
    running: () => server !== undefined,
    async destroy() {
      await kill()
      rmSync(root, { recursive: true, force: true })
    },
  }
}
