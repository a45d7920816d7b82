import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEMO_APP_URL, DEMO_FILE, seedNotificationsDemo, type NotificationsDemo } from '../../devnet/notifications-demo.js'
import { hashSecret } from '../../src/notifications/credentials.js'
import { createDashboard } from '../../src/notifications/dashboard.js'
import { startTestChain, type TestChain } from '../support/chain.js'
import { until } from '../support/poll.js'
import { spawnRole, type RoleProcess } from '../support/processes.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

/**
 * The notification demo a plain `npm start` seeds on the devnet: what it
 * writes, that a restart leaves one project and one working key, and that
 * neither a configured chain nor NODE_ENV=production gets any of it. The
 * README's notification examples run against it in test/readme.
 */

const silent = pino({ level: 'silent' })
// the anvil dev accounts the devnet's traffic uses (its 3rd to 10th)
const wallets = [
  '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
  '0x90f79bf6eb2c4f870365e785982e1f101e93b906',
  '0xa0ee7a142d267c1f36714e4a8f75612f20a79720',
]

let database: TestDatabase
let redis: TestRedis
let directory: string
beforeAll(async () => {
  ;[database, redis] = await Promise.all([createTestDatabase('demo'), createTestRedis()])
  directory = await mkdtemp(join(tmpdir(), 'demo-'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true })
  await redis?.cleanup()
  await database?.drop()
})

type DemoRows = { projects: number; whitelisted: boolean[]; liveKeys: string[]; pins: Array<{ wallet: string; enabled: boolean }> }

async function demoRows(): Promise<DemoRows> {
  const sql = database.db.$client
  const projects = await sql<{ id: string; whitelisted: boolean }[]>`
    select p.id, p.whitelisted from notification_projects p join notification_apps a on a.project_id = p.id where a.app_url = ${DEMO_APP_URL}`
  const liveKeys = await sql<{ key_hash: string }[]>`
    select key_hash from notification_api_keys where project_id = any(${projects.map((project) => project.id)}::uuid[]) and revoked_at is null`
  const pins = await sql<{ wallet: string; enabled: boolean }[]>`
    select wallet_address as wallet, notifications_enabled as enabled from notification_pins where app_url = ${DEMO_APP_URL} and pinned order by id`
  return { projects: projects.length, whitelisted: projects.map((project) => project.whitelisted), liveKeys: liveKeys.map((row) => row.key_hash), pins: [...pins] }
}

describe('seedNotificationsDemo', () => {
  let first: NotificationsDemo
  it('development: a whitelisted project owning the app, one key in a file only its owner reads, the wallets pinned (the last with notifications off)', async () => {
    first = (await seedNotificationsDemo({ db: database.db, wallets, nodeEnv: 'development', logger: silent, directory }))!
    const file = join(directory, DEMO_FILE)
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(first)
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    expect(first).toMatchObject({
      appUrl: DEMO_APP_URL,
      apiKey: expect.stringMatching(/^ank_/),
      notifying: ['0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC', '0x90F79bf6EB2c4f870365E785982E1f101E93b906'],
      silent: '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720',
    })
    expect(await demoRows()).toEqual({
      projects: 1,
      whitelisted: [true],
      liveKeys: [hashSecret(first.apiKey)],
      pins: [
        { wallet: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC', enabled: true },
        { wallet: '0x90F79bf6EB2c4f870365E785982E1f101E93b906', enabled: true },
        { wallet: '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720', enabled: false },
      ],
    })
  })

  it('the next start: the same project (allowed to send again), a new key, the previous one revoked, the same pins', async () => {
    await createDashboard({ db: database.db }).setWhitelisted(first.projectId, false)
    const second = (await seedNotificationsDemo({ db: database.db, wallets, nodeEnv: 'development', logger: silent, directory }))!
    expect(second.projectId).toBe(first.projectId)
    expect(second.apiKey).not.toBe(first.apiKey)
    const rows = await demoRows()
    expect(rows).toMatchObject({ projects: 1, whitelisted: [true], liveKeys: [hashSecret(second.apiKey)] })
    expect(rows.pins).toHaveLength(3)
    expect(JSON.parse(await readFile(join(directory, DEMO_FILE), 'utf8')).apiKey).toBe(second.apiKey)
  })

  it('production and test runs: nothing at all', async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), 'demo-none-'))
    try {
      const fresh = await createTestDatabase('demo_none')
      try {
        for (const nodeEnv of ['production', 'test'] as const) {
          expect(await seedNotificationsDemo({ db: fresh.db, wallets, nodeEnv, logger: silent, directory: elsewhere })).toBeUndefined()
        }
        const [row] = await fresh.db.$client<{ n: number }[]>`select (select count(*) from notification_projects) + (select count(*) from notification_pins) as n`
        expect(Number(row!.n)).toBe(0)
        await expect(stat(join(elsewhere, DEMO_FILE))).rejects.toMatchObject({ code: 'ENOENT' })
      } finally {
        await fresh.drop()
      }
    } finally {
      await rm(elsewhere, { recursive: true, force: true })
    }
  })
})

describe('`attribution start`: no demo outside a development devnet', () => {
  let chain: TestChain | undefined
  afterAll(async () => {
    await chain?.stop()
  })

  async function readyThenStop(role: RoleProcess): Promise<{ ready: { chains: Array<{ devnet?: boolean }> }; output: string }> {
    try {
      const line = await until(
        'the ready line',
        () => {
          if (role.child.exitCode !== null) throw new Error(`exited ${role.child.exitCode}:\n${role.output()}`)
          return role.output().split('\n').find((text) => text.includes('"msg":"ready"'))
        },
        { timeoutMs: 90_000, intervalMs: 100 },
      )
      return { ready: JSON.parse(line), output: role.output() }
    } finally {
      role.child.kill('SIGTERM')
      await role.exited
    }
  }

  // each start gets a database without a demo in it: the seeding tests above made one in `database`
  async function withFreshDatabase(run: (env: Record<string, string>) => Promise<void>) {
    const fresh = await createTestDatabase('demo_start')
    try {
      await run({ DATABASE_URL: fresh.url, REDIS_URL: redis.url, QUEUE_PREFIX: `${redis.prefix}${fresh.name}`, PORT: '0', LOG_LEVEL: 'info' })
      const [row] = await fresh.db.$client<{ n: number }[]>`select (select count(*) from notification_projects) + (select count(*) from notification_pins) as n`
      expect(Number(row!.n)).toBe(0)
    } finally {
      await fresh.drop()
    }
  }

  it('a real chain configured, in development: indexes it, no demo', async () => {
    chain = await startTestChain()
    await withFreshDatabase(async (env) => {
      const { ready, output } = await readyThenStop(spawnRole('start', { ...env, NODE_ENV: 'development', RPC_URL: chain!.rpcUrl, CONFIRMATIONS: '0' }))
      expect(ready.chains).toEqual([expect.not.objectContaining({ devnet: true })])
      expect(output).not.toContain('devnet notifications demo')
    })
  }, 150_000)

  it('NODE_ENV=production with no chain: the devnet runs, no demo', async () => {
    await withFreshDatabase(async (env) => {
      const { ready, output } = await readyThenStop(spawnRole('start', { ...env, NODE_ENV: 'production', CURSOR_SECRET: 'notifications-demo-test-secret', DEVNET_PORT: '0' }))
      expect(ready.chains).toEqual([expect.objectContaining({ devnet: true })])
      expect(output).not.toContain('devnet notifications demo')
    })
  }, 150_000)
})
