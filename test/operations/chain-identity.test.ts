import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestChain, type TestChain } from '../support/chain.js'
import { chainsEnv, spawnRole, type RoleProcess } from '../support/processes.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { until as poll } from '../support/poll.js'

/** Chain identity by genesis hash, through real `attribution` processes on one database. */

let database: TestDatabase
let redis: TestRedis
beforeAll(async () => {
  ;[database, redis] = await Promise.all([createTestDatabase('identity'), createTestRedis()])
})
afterAll(async () => {
  await redis?.cleanup()
  await database?.drop()
})

/** Waits until `role` has logged `text` `times` times; a role that exits first fails the wait. */
async function logged(role: RoleProcess, text: string, times = 1) {
  await poll(`"${text}" logged ${times}×`, () => {
    if (role.child.exitCode !== null) throw new Error(`exited before "${text}":\n${role.output()}`)
    return role.output().split(text).length - 1 >= times
  }, { intervalMs: 100 })
}

async function stop(role: RoleProcess) {
  role.child.kill('SIGTERM')
  expect(await role.exited).toBe(0)
}

const indexedRanges = async (databaseName: TestDatabase, chainId: number) =>
  (await databaseName.db.$client<{ n: number }[]>`select count(*)::int as n from ranges where chain_id = ${chainId} and status = 'done'`)[0]!.n

describe('chain identity', () => {
  it('a restarted devnet on the same database is a new chain: one info line, the old index reset, no reorg', async () => {
    const env = { DATABASE_URL: database.url, REDIS_URL: redis.url, QUEUE_PREFIX: `${redis.prefix}dev`, DEVNET_PORT: '0', PORT: '0', LOG_LEVEL: 'info' }
    const first = spawnRole('start', env)
    await logged(first, 'devnet traffic summary')
    await poll('a first indexed range', async () => (await indexedRanges(database, 31337)) > 0)
    await stop(first)

    const second = spawnRole('start', env)
    await logged(second, 'devnet traffic summary')
    await stop(second)
    const output = second.output()
    const resets = output.split('\n').filter((line) => line.includes('previous devnet run’s index was reset'))
    expect(resets).toHaveLength(1)
    expect(JSON.parse(resets[0]!).level).toBe(30)
    expect(output).not.toContain('REORG')
    expect(output).not.toContain('rolling back')
    expect(output).not.toContain('"level":50')
  }, 180_000)

  it('a configured chain whose genesis changed is refused with one line, exit 78', async () => {
    let chain: TestChain | undefined
    let other: TestChain | undefined
    // its own database: the devnet test above stored the devnet's genesis for chain 31337 in the shared one
    const realDatabase = await createTestDatabase('identity_real')
    try {
      chain = await startTestChain()
      const env = { DATABASE_URL: realDatabase.url, REDIS_URL: redis.url, QUEUE_PREFIX: `${redis.prefix}real`, DEVNET: 'false', LOG_LEVEL: 'info' }
      const follower = spawnRole('follower', { ...env, CHAINS: chainsEnv([chain.config]) })
      await logged(follower, 'follower lock acquired')
      await stop(follower)
      const genesis = (await chain.client.getBlock({ blockNumber: 0n })).hash
      await chain.stop()
      chain = undefined

      // another anvil: the same chain id 31337, another genesis block
      other = await startTestChain()
      const otherGenesis = (await other.client.getBlock({ blockNumber: 0n })).hash
      const refused = spawnRole('follower', { ...env, CHAINS: chainsEnv([other.config]) })
      expect(await refused.exited).toBe(78)
      expect(refused.output().split('\n').at(-1)).toBe(
        `chain 31337: the node at ${new URL(other.rpcUrl).host} has genesis block ${otherGenesis}, but this database indexed chain 31337 with genesis ${genesis}; ` +
          'refusing to mix two chains (use another DATABASE_URL for this node, or the node of the indexed chain)',
      )
    } finally {
      await chain?.stop()
      await other?.stop()
      await realDatabase.drop()
    }
  }, 180_000)
})
