import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { startOrphanGuard } from '../../devnet/orphan-guard.js'
import { until } from '../support/poll.js'

/**
 * `npm start` run the way the README says, in the clone, as a process group
 * of its own (npm, its shell, the daemon, anvil), so stopping it leaves
 * nothing behind.
 */

export const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url))

export type NpmStart = {
  /** The API's base URL, from the `ready` line. */
  api: string
  output(): string
  stop(): Promise<void>
}

/** What a newcomer's shell would not have: settings the test runner's own environment carries. */
const NOT_A_NEWCOMERS = ['NODE_ENV', 'RPC_URL', 'CHAINS', 'WS_URL', 'ADMIN_TOKEN', 'PLATFORM_TOKEN', 'CURSOR_SECRET', 'DEVNET', 'LOG_LEVEL', 'VITEST', 'VITEST_POOL_ID', 'VITEST_WORKER_ID']

/** The environment of a plain shell in the clone, with `settings` (the test's database, ports) on top. */
export function newcomerEnvironment(settings: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of NOT_A_NEWCOMERS) delete env[name]
  return { ...env, ...settings }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals) {
  try {
    process.kill(-child.pid!, signal)
  } catch {
    // already gone
  }
}

export async function npmStart(env: NodeJS.ProcessEnv): Promise<NpmStart> {
  const child = spawn('npm', ['start'], { cwd: repositoryRoot, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const guard = startOrphanGuard(child.pid!, { group: true })
  const lines: string[] = []
  const keep = (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean))
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const output = () => lines.join('\n')
  const stop = async () => {
    // Ctrl-C at a terminal reaches the whole group; npm's own 130 is not the service's status (README)
    killGroup(child, 'SIGINT')
    await exited
    killGroup(child, 'SIGKILL')
    guard?.kill('SIGKILL')
  }
  try {
    const ready = await until(
      '`npm start` to log its ready line',
      () => {
        if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}:\n${output()}`)
        const line = lines.find((text) => text.includes('"msg":"ready"'))
        return line ? (JSON.parse(line) as { api: string }) : undefined
      },
      { timeoutMs: 90_000, intervalMs: 100, describe: () => lines.slice(-5).join('\n') },
    )
    return { api: new URL(ready.api).origin, output, stop }
  } catch (error) {
    await stop()
    throw error
  }
}
