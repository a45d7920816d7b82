import { createServer, type AddressInfo, type Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnRole, type RoleProcess } from '../support/processes.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { until } from '../support/poll.js'
import { wholeOutput } from '../support/whole-output.js'

/**
 * A start-up that fails must fail before it touches the index: a second
 * devnet instance on the same database, or a taken PORT or DEVNET_PORT,
 * exits 78 with one line and leaves the running (or stopped) instance's
 * index as it was. Real `attribution start` processes on one database.
 */

let database: TestDatabase
let redis: TestRedis
beforeAll(async () => {
  ;[database, redis] = await Promise.all([createTestDatabase('one_database'), createTestRedis()])
})
afterAll(async () => {
  await redis?.cleanup()
  await database?.drop()
})

const stackLine = /^\s+at\s/m

function devnetEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    QUEUE_PREFIX: redis.prefix,
    DEVNET_PORT: '0',
    PORT: '0',
    LOG_LEVEL: 'info',
    CURSOR_SECRET: 'one-database-test-secret',
    STARTUP_TIMEOUT_MS: '3000',
    ...extra,
  }
}

/** Ranges and attribution rows of the devnet chain: what a reset would take away. */
async function indexed(): Promise<{ ranges: number; attributions: number }> {
  const [row] = await database.db.$client<{ ranges: number; attributions: number }[]>`
    select (select count(*) from ranges where chain_id = 31337 and status = 'done')::int as ranges,
           (select count(*) from attributions where chain_id = 31337)::int as attributions`
  return row!
}

/** A port something else already listens on, held until `close`. */
async function takenPort(): Promise<{ port: number; server: Server }> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port, server }
}

async function refused(role: RoleProcess): Promise<{ code: number | null; last: string; output: string }> {
  const code = await role.exited
  const output = role.output()
  return { code, last: output.split('\n').at(-1)!, output }
}

describe('start-up never harms a running index', () => {
  let first: RoleProcess
  let firstOutput: ReturnType<typeof wholeOutput>
  let before: { ranges: number; attributions: number }

  beforeAll(async () => {
    first = spawnRole('start', devnetEnv())
    firstOutput = wholeOutput(first)
    // some attribution rows committed: a reset would be seen
    await until('attribution rows of the first instance', async () => {
      if (first.child.exitCode !== null) throw new Error(first.output())
      return (await indexed()).attributions > 0
    }, { timeoutMs: 110_000, intervalMs: 200 })
  }, 120_000)
  afterAll(async () => {
    await first?.kill('SIGKILL')
  })

  const readyLines = () => firstOutput.text().split('\n').filter((line) => line.includes('"msg":"ready"'))

  it('the running instance said `ready` with its URLs and roles, and answers requests', async () => {
    await until('the ready line', () => readyLines().length > 0, { intervalMs: 100 })
    const ready = JSON.parse(readyLines()[0]!) as Record<string, unknown>
    expect(ready).toMatchObject({ level: 30, roles: ['api', 'follower', 'worker'], chains: [{ chain_id: 31337, devnet: true }] })
    expect(String(ready.dashboard)).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dashboard$/)
    // a request answered; that it left no line at info is judged once the process has exited (its whole output is in)
    expect((await fetch(`${ready.api as string}/analytics/leaderboard`)).status).toBe(200)
  }, 60_000)

  it('a second devnet instance on the same database exits 78 with one line naming the holder; the first one’s index stays', async () => {
    before = await indexed()
    const second = await refused(spawnRole('start', devnetEnv({ QUEUE_PREFIX: `${redis.prefix}b` })))
    expect(second.code).toBe(78)
    expect(second.last).toMatch(
      /^DATABASE_URL: this database's devnet index is in use by attribution start pid=\d+ host=\S+ PORT=\d+ DEVNET_PORT=\d+ \(PostgreSQL backend \d+, since [0-9T:.-]+Z\); starting a devnet here would reset it: stop that instance, or give this one its own DATABASE_URL$/,
    )
    expect(second.output).not.toMatch(stackLine)
    // no anvil of its own was started, nothing was reset
    expect(second.output).not.toContain('devnet ready')
    const after = await indexed()
    expect(after.ranges).toBeGreaterThanOrEqual(before.ranges)
    expect(after.attributions).toBeGreaterThanOrEqual(before.attributions)
    expect(first.child.exitCode).toBeNull()
    expect(first.output()).not.toContain('index was reset')
  }, 60_000)

  it('once the first instance stopped, a start on a taken PORT or DEVNET_PORT exits 78 with one line, the index untouched', async () => {
    first.child.kill('SIGTERM')
    expect(await first.exited).toBe(0)
    await firstOutput.complete
    // its whole life is printed now: `ready` once, no request at info, no library warning on stderr
    // (Fastify's FSTDEP023 was printed on every start)
    expect(readyLines()).toHaveLength(1)
    expect(firstOutput.text()).not.toContain('"msg":"request completed"')
    expect(firstOutput.text()).not.toContain('"msg":"incoming request"')
    expect(firstOutput.text()).not.toMatch(/Deprecation|FSTDEP|\(node:\d+\)/)
    expect(firstOutput.text()).toContain('"msg":"stopped"')
    before = await indexed()
    expect(before.attributions).toBeGreaterThan(0)
    const taken = await takenPort()
    try {
      const api = await refused(spawnRole('start', devnetEnv({ PORT: String(taken.port) })))
      expect(api.code).toBe(78)
      expect(api.last).toBe(`PORT: 127.0.0.1:${taken.port} is already in use (EADDRINUSE): stop what listens there or choose a free port`)
      expect(api.output).not.toMatch(stackLine)
      expect(api.output).not.toContain('database migrated')

      const devnet = await refused(spawnRole('start', devnetEnv({ DEVNET_PORT: String(taken.port) })))
      expect(devnet.code).toBe(78)
      expect(devnet.last).toBe(`DEVNET_PORT: 127.0.0.1:${taken.port} is already in use (EADDRINUSE): stop what listens there or choose a free port`)
      expect(devnet.output).not.toMatch(stackLine)
      expect(devnet.output).not.toContain('database migrated')
    } finally {
      await new Promise((resolve) => taken.server.close(resolve))
    }
    expect(await indexed()).toEqual(before)
  }, 60_000)
})
