import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { ChainConfig } from '../../src/config/chains.js'
import { startOrphanGuard } from '../../devnet/orphan-guard.js'

const cliPath = fileURLToPath(new URL('../../bin/attribution.mjs', import.meta.url))

export type RoleProcess = {
  child: ChildProcess
  /** Last lines the process printed, for failure messages. */
  output(): string
  kill(signal?: NodeJS.Signals): Promise<void>
  exited: Promise<number | null>
}

const running = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of running) killGroup(child, 'SIGKILL')
})

/** Signals the child's whole process group: the daemon and what it started (anvil, its guard). */
function killGroup(child: ChildProcess, signal: NodeJS.Signals) {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // the group is already gone
  }
}

/** How long a role may take to stop after a signal other than SIGKILL before it is killed and the test fails. */
const GRACEFUL_STOP_MS = 30_000

/** Runs `attribution <role>` as a child process, the way operators run it, in its own process group. */
export function spawnRole(role: 'start' | 'api' | 'follower' | 'worker', env: Record<string, string>, args: string[] = []): RoleProcess {
  const child = spawn(process.execPath, [cliPath, role, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  running.add(child)
  const guard = child.pid === undefined ? undefined : startOrphanGuard(child.pid, { group: true })
  const lines: string[] = []
  const keep = (chunk: Buffer) => {
    lines.push(...chunk.toString('utf8').split('\n').filter(Boolean))
    if (lines.length > 200) lines.splice(0, lines.length - 200)
  }
  child.stdout!.on('data', keep)
  child.stderr!.on('data', keep)
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code) => {
      running.delete(child)
      // what the role started (anvil) goes with it; the guard's job is done
      killGroup(child, 'SIGKILL')
      guard?.kill('SIGKILL')
      resolve(code)
    })
  })
  return {
    child,
    output: () => lines.join('\n'),
    exited,
    async kill(signal = 'SIGKILL') {
      // SIGKILL takes the whole group (a crash); other signals go to the role alone, as an orchestrator sends them
      if (child.exitCode === null && child.signalCode === null) {
        if (signal === 'SIGKILL') killGroup(child, signal)
        else child.kill(signal)
      }
      if (signal === 'SIGKILL') return void (await exited)
      // the daemon ends within its own shutdown deadline (cli.ts, under 2 s): one still running long after is a
      // bug to report with its log, not a test (and a CI run) waiting for ever; killed, as an orchestrator would
      let timer: NodeJS.Timeout | undefined
      const stuck = await Promise.race([exited.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(resolve, GRACEFUL_STOP_MS, true)))])
      clearTimeout(timer)
      if (!stuck) return
      killGroup(child, 'SIGKILL')
      await exited
      throw new Error(`attribution ${role} did not stop within ${GRACEFUL_STOP_MS} ms of ${signal}; its last lines:\n${lines.join('\n')}`)
    },
  }
}

/** CHAINS value naming exactly these chains, for child processes. */
export function chainsEnv(chains: ChainConfig[]): string {
  return JSON.stringify(
    chains.map((chain) => ({
      chainId: chain.chainId,
      rpcUrl: chain.rpcUrl,
      startBlock: chain.startBlock,
      confirmations: chain.confirmations,
      pollIntervalMs: chain.pollIntervalMs,
      entryPoints: chain.entryPoints,
    })),
  )
}
