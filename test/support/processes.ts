import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { ChainConfig } from '../../src/config/chains.js'

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
  for (const child of running) child.kill('SIGKILL')
})

/** Runs `attribution <role>` as a child process, the way operators run it. */
export function spawnRole(role: 'start' | 'api' | 'follower' | 'worker', env: Record<string, string>): RoleProcess {
  const child = spawn(process.execPath, [cliPath, role], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  running.add(child)
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
      resolve(code)
    })
  })
  return {
    child,
    output: () => lines.join('\n'),
    exited,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      await exited
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
