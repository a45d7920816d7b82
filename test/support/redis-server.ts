import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { freePort } from '../../devnet/free-port.js'

export type RedisServer = {
  url: string
  port: number
  /** Stops the server (its data is gone: nothing is persisted, like the machine's Redis). */
  stop(): Promise<void>
  /** Starts it again on the same port. */
  start(): Promise<void>
}

/**
 * A private redis-server for tests that take Redis away, so the machine's
 * shared Redis is never touched.
 */
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'redis-'))
  let child: ChildProcess | undefined

  async function start() {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--maxmemory-policy', 'noeviction'], {
      stdio: 'ignore',
    })
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    probe.on('error', () => {})
    for (let i = 0; i < 100; i++) {
      try {
        await probe.connect()
        await probe.ping()
        probe.disconnect()
        return
      } catch {
        await sleep(50)
      }
    }
    probe.disconnect()
    throw new Error(`redis-server did not start on port ${port}`)
  }

  async function stop() {
    const running = child
    child = undefined
    if (!running || running.exitCode !== null) return
    const exited = new Promise((resolve) => running.once('exit', resolve))
    running.kill('SIGKILL')
    await exited
  }

  await start()
  process.once('exit', () => child?.kill('SIGKILL'))
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    async stop() {
      await stop()
    },
  }
}

