import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { startOrphanGuard } from './orphan-guard.js'

export type AnvilOptions = {
  /** TCP port; 0 (the default) lets the OS pick a free one, read back from anvil's banner. */
  port?: number
  host?: string
  chainId?: number
  /** Seconds between blocks (interval mining). Omitted: a block per transaction (automine). */
  blockTime?: number
  /** Start with mining off: blocks appear only through `evm_mine`/`anvil_mine`. */
  noMining?: boolean
  /** Funded dev accounts of anvil's default mnemonic (anvil's default is 10). */
  accounts?: number
  /** Extra command-line arguments passed to anvil unchanged. */
  args?: string[]
  /** How long to wait for anvil to answer JSON-RPC. */
  startTimeoutMs?: number
}

export type Anvil = {
  rpcUrl: string
  wsUrl: string
  host: string
  port: number
  chainId: number
  /** The anvil process itself (killing it is how fault tests take the node away). */
  process: ChildProcess
  /** Kills anvil and resolves once it has exited. Safe to call twice. */
  stop(): Promise<void>
}

export class AnvilStartError extends Error {
  override name = 'AnvilStartError'
}

/** anvil's own default, kept for the devnet: the chain id wallets and tools expect of a local node. */
export const DEVNET_CHAIN_ID = 31337
const DEFAULT_CHAIN_ID = DEVNET_CHAIN_ID
const STOP_GRACE_MS = 3_000
const OUTPUT_LINES_KEPT = 30

/** Every anvil this process started and has not stopped, killed when the process exits. */
const running = new Set<ChildProcess>()
let exitHookInstalled = false

function killOnProcessExit(child: ChildProcess) {
  running.add(child)
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on('exit', () => {
    for (const anvil of running) if (!hasExited(anvil)) anvil.kill('SIGKILL')
  })
}

const PLATFORM_PACKAGES: Record<string, string> = {
  'linux-x64': '@foundry-rs/anvil-linux-amd64',
  'linux-arm64': '@foundry-rs/anvil-linux-arm64',
  'darwin-x64': '@foundry-rs/anvil-darwin-amd64',
  'darwin-arm64': '@foundry-rs/anvil-darwin-arm64',
  'win32-x64': '@foundry-rs/anvil-win32-amd64',
}

/**
 * Path of the anvil binary shipped by `@foundry-rs/anvil`. The package's own
 * `bin.mjs` is a node wrapper that spawns this binary; running the binary
 * directly saves a node process per chain and makes `process.pid` anvil's.
 */
export function anvilBinaryPath(): string {
  const packageName = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`]
  if (!packageName) throw new AnvilStartError(`anvil has no binary for ${process.platform}-${process.arch}`)
  const binary = process.platform === 'win32' ? 'anvil.exe' : 'anvil'
  const require = createRequire(import.meta.url)
  try {
    return require.resolve(`${packageName}/bin/${binary}`)
  } catch {
    throw new AnvilStartError(`${packageName} is not installed (it is an optional dependency of @foundry-rs/anvil)`)
  }
}

function anvilArguments(options: AnvilOptions, host: string, chainId: number): string[] {
  const args = ['--host', host, '--port', String(options.port ?? 0), '--chain-id', String(chainId)]
  if (options.blockTime !== undefined) args.push('--block-time', String(options.blockTime))
  if (options.noMining) args.push('--no-mining')
  if (options.accounts !== undefined) args.push('--accounts', String(options.accounts))
  return [...args, ...(options.args ?? [])]
}

function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null
}

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (hasExited(child)) return Promise.resolve(true)
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
}

async function answersJsonRpc(rpcUrl: string): Promise<boolean> {
  try {
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(1_000),
    })
    const body = (await response.json()) as { result?: string }
    return typeof body.result === 'string'
  } catch {
    return false
  }
}

/**
 * Starts anvil and resolves once it answers JSON-RPC. Anvil prints
 * `Listening on host:port` once bound, which is how an ephemeral port (0) is
 * learned without racing other processes for a "free" port.
 */
export async function startAnvil(options: AnvilOptions = {}): Promise<Anvil> {
  const host = options.host ?? '127.0.0.1'
  const chainId = options.chainId ?? DEFAULT_CHAIN_ID
  const timeoutMs = options.startTimeoutMs ?? 15_000
  const child = spawn(anvilBinaryPath(), anvilArguments(options, host, chainId), { stdio: ['ignore', 'pipe', 'pipe'] })

  // anvil logs every RPC call; keep only the tail, for error messages
  const output: string[] = []
  const remember = (chunk: Buffer) => {
    output.push(...chunk.toString('utf8').split('\n').filter(Boolean))
    if (output.length > OUTPUT_LINES_KEPT) output.splice(0, output.length - OUTPUT_LINES_KEPT)
  }
  child.stdout!.on('data', remember)
  child.stderr!.on('data', remember)

  child.on('error', (error) => remember(Buffer.from(`spawn error: ${error.message}`)))
  killOnProcessExit(child)
  const guard = child.pid === undefined ? undefined : startOrphanGuard(child.pid)

  let stopping: Promise<void> | undefined
  const stop = () => {
    stopping ??= (async () => {
      // the guard goes first: once anvil is gone its pid may be reused
      guard?.kill('SIGKILL')
      if (!hasExited(child)) {
        child.kill('SIGTERM')
        if (!(await waitForExit(child, STOP_GRACE_MS))) {
          child.kill('SIGKILL')
          await waitForExit(child, STOP_GRACE_MS)
        }
      }
      running.delete(child)
      child.stdout?.destroy()
      child.stderr?.destroy()
    })()
    return stopping
  }

  try {
    const port = await listeningPort(child, output, timeoutMs)
    const rpcUrl = `http://${host}:${port}`
    const deadline = Date.now() + timeoutMs
    while (!(await answersJsonRpc(rpcUrl))) {
      if (hasExited(child)) throw exited(child, output)
      if (Date.now() > deadline) throw new AnvilStartError(`anvil did not answer JSON-RPC at ${rpcUrl} within ${timeoutMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    // from here on anvil must never keep this process alive on its own
    child.unref()
    ;(child.stdout as unknown as { unref?: () => void }).unref?.()
    ;(child.stderr as unknown as { unref?: () => void }).unref?.()
    return { rpcUrl, wsUrl: `ws://${host}:${port}`, host, port, chainId, process: child, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

function exited(child: ChildProcess, output: string[]): AnvilStartError {
  const how = child.signalCode ?? `code ${child.exitCode}`
  // the reason goes on the first line: start-up prints only that one (anvil's last line, e.g. "Address already in use")
  const reason = output.at(-1)?.trim() || 'it printed nothing'
  return new AnvilStartError(`anvil exited (${how}) before it was ready: ${reason}\n${output.slice(-10).join('\n')}`)
}

function listeningPort(child: ChildProcess, output: string[], timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let buffered = ''
    const timer = setTimeout(() => finish(new AnvilStartError(`anvil did not start listening within ${timeoutMs} ms`)), timeoutMs)
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8')
      const match = /Listening on [^\s]*:(\d+)/.exec(buffered)
      if (match) finish(undefined, Number(match[1]))
      else if (buffered.length > 64_000) buffered = buffered.slice(-1_000)
    }
    const onExit = () => finish(exited(child, output))
    const onError = (error: Error) => finish(new AnvilStartError(`could not run anvil: ${error.message}`))
    function finish(error: Error | undefined, port?: number) {
      clearTimeout(timer)
      child.stdout!.off('data', onData)
      child.off('exit', onExit)
      child.off('error', onError)
      if (error) reject(error)
      else resolve(port!)
    }
    child.stdout!.on('data', onData)
    child.once('exit', onExit)
    child.once('error', onError)
  })
}
