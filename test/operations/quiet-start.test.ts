import { readFileSync, statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnRole, type RoleProcess } from '../support/processes.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { until } from '../support/poll.js'
// a port nothing listens on: bound, read, closed
import { freePort as closedPort } from '../../devnet/free-port.js'

/**
 * A newcomer's `npm start` is quiet and its end is plain (issue 43.5): no
 * warning about a cursor secret they never set, a dead RPC_URL said within
 * RPC_STARTUP_TIMEOUT_MS however long PostgreSQL and Redis may be waited
 * for, and `stopped` as the very last line after Ctrl-C. Real child
 * processes, real PostgreSQL, Redis and anvil.
 */

const secretFile = fileURLToPath(new URL('../../.cursor-secret', import.meta.url))

let database: TestDatabase
let redis: TestRedis
beforeAll(async () => {
  ;[database, redis] = await Promise.all([createTestDatabase('quiet_start'), createTestRedis()])
})
afterAll(async () => {
  await redis?.cleanup()
  await database?.drop()
})

function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { DATABASE_URL: database.url, REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix, DEVNET: 'false', PORT: '0', LOG_LEVEL: 'info', NODE_ENV: 'development', CURSOR_SECRET: '', ...extra }
}

const linesOf = (role: RoleProcess) => role.output().split('\n').map((line) => JSON.parse(line) as { level: number; msg: string; file?: string })
/** What a run printed until it was told to stop. */
const startUpLines = (role: RoleProcess) => {
  const lines = linesOf(role)
  return lines.slice(0, lines.findIndex((line) => line.msg === 'shutting down'))
}

async function untilReady(role: RoleProcess) {
  await until('the ready line', () => {
    if (role.child.exitCode !== null) throw new Error(role.output())
    return role.output().includes('"msg":"ready"')
  }, { intervalMs: 100 })
}

describe('the cursor secret in development', () => {
  it('is generated into .cursor-secret, reused by the next run, and no warning is printed', async () => {
    const first = spawnRole('api', baseEnv())
    await untilReady(first)
    const secret = readFileSync(secretFile, 'utf8').trim()
    expect(secret).toMatch(/^[0-9a-f]{48}$/)
    expect(statSync(secretFile).mode & 0o077).toBe(0)
    first.child.kill('SIGTERM')
    expect(await first.exited).toBe(0)
    // the first run on this checkout says where the secret went; any run that found it says nothing
    expect(startUpLines(first).filter((line) => line.level >= 40)).toEqual([])

    const second = spawnRole('api', baseEnv())
    await untilReady(second)
    second.child.kill('SIGTERM')
    expect(await second.exited).toBe(0)
    expect(readFileSync(secretFile, 'utf8').trim()).toBe(secret)
    expect(startUpLines(second).filter((line) => line.level >= 40 || line.msg.includes('CURSOR_SECRET'))).toEqual([])
  }, 60_000)
})

describe('a dead RPC_URL', () => {
  it('ends the start-up after RPC_STARTUP_TIMEOUT_MS (default 10 s), however long STARTUP_TIMEOUT_MS would wait', async () => {
    const port = await closedPort()
    // ten minutes for PostgreSQL and Redis: only the RPC's own bound can end this start-up within the test's time
    const role = spawnRole('follower', baseEnv({ RPC_URL: `http://127.0.0.1:${port}`, STARTUP_TIMEOUT_MS: '600000' }))
    expect(await role.exited).toBe(78)
    expect(role.output().split('\n').at(-1)).toBe(`still unreachable after 10 s (RPC_STARTUP_TIMEOUT_MS=10000), exiting: RPC_URL: rpc at 127.0.0.1:${port} (ECONNREFUSED)`)
  }, 60_000)
})

describe('`start` with the devnet', () => {
  it('`validate --api` gets the daemon\'s answer; on Ctrl-C `stopped` is the last line, after the devnet traffic has stopped logging', async () => {
    const role = spawnRole('start', baseEnv({ DEVNET: 'true', DEVNET_PORT: '0', QUEUE_PREFIX: `${redis.prefix}dev` }))
    await until('a devnet traffic summary', () => {
      if (role.child.exitCode !== null) throw new Error(role.output())
      return role.output().includes('devnet traffic summary')
    }, { intervalMs: 100 })

    // the README's validate example through the running daemon's API: the same JSON as the API's, exit 0
    const api = new URL((linesOf(role).find((line) => line.msg === 'ready') as unknown as { api: string }).api).origin
    const sample = (linesOf(role).find((line) => line.msg === 'devnet traffic summary') as unknown as { sample_tx_hash: string }).sample_tx_hash
    const viaApi = spawnRole('validate' as 'start', { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }, [sample, '--api', api])
    expect(await viaApi.exited).toBe(0)
    const answer = JSON.parse(viaApi.output())
    expect(answer).toMatchObject({ attributed: true, type: 'transaction', hash: sample, chainId: 31337 })
    expect(answer).toEqual(await (await fetch(`${api}/v1/attribution/validate?type=transaction&hash=${sample}`)).json())
    const port = await closedPort()
    const noDaemon = spawnRole('validate' as 'start', {}, [sample, '--api', `http://127.0.0.1:${port}`])
    expect(await noDaemon.exited).toBe(78)
    expect(noDaemon.output()).toBe(`--api: no answer from 127.0.0.1:${port} (ECONNREFUSED): start the daemon (npm start) or leave out --api`)

    // a terminal's Ctrl-C: SIGINT to the whole process group, anvil included
    process.kill(-role.child.pid!, 'SIGINT')
    expect(await role.exited).toBe(0)
    const lines = linesOf(role)
    expect(lines.at(-1)).toMatchObject({ msg: 'stopped' })
    expect(lines.at(-1)).not.toHaveProperty('deadline_reached')
    expect(lines.filter((line) => line.msg === 'stopped')).toHaveLength(1)
  }, 120_000)
})
