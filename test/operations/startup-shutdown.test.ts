import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRangeQueue } from '../../src/pipeline/queue.js'
import { createRedis } from '../../src/redis/client.js'
import { startTestChain, type TestChain } from '../support/chain.js'
import { anvilChain, indexerEnv, startTestIndexer } from '../support/indexer.js'
import { chainsEnv, spawnRole, type RoleProcess } from '../support/processes.js'
import { startRpcProxy, type RpcProxy } from '../support/rpc-proxy.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { until } from '../support/poll.js'
// a port nothing listens on: bound, read, closed
import { freePort as closedPort } from '../../devnet/free-port.js'

/**
 * What an operator sees from `attribution start|follower|worker|validate`
 * when a dependency is missing, and on SIGTERM: real child processes, real
 * PostgreSQL and Redis.
 */

const stackLine = /^\s+at\s/m

let database: TestDatabase
let redis: TestRedis
beforeAll(async () => {
  ;[database, redis] = await Promise.all([createTestDatabase('operations'), createTestRedis()])
})
afterAll(async () => {
  await redis?.cleanup()
  await database?.drop()
})

function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { DATABASE_URL: database.url, REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix, DEVNET: 'false', PORT: '0', LOG_LEVEL: 'info', STARTUP_TIMEOUT_MS: '1500', ...extra }
}

async function lastLine(role: RoleProcess): Promise<{ code: number | null; last: string; output: string }> {
  const code = await role.exited
  const output = role.output()
  return { code, last: output.split('\n').at(-1)!, output }
}

describe('start-up against unreachable dependencies', () => {
  it('DATABASE_URL at a closed port: one waiting line naming it, then exit 78 with one line, no stack', async () => {
    const port = await closedPort()
    const { code, last, output } = await lastLine(spawnRole('start', baseEnv({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x` })))
    expect(code).toBe(78)
    expect(last).toBe(`still unreachable after 2 s (STARTUP_TIMEOUT_MS=1500), exiting: DATABASE_URL: postgres at 127.0.0.1:${port} (ECONNREFUSED)`)
    const waiting = output.split('\n').filter((line) => line.includes('"msg":"waiting for DATABASE_URL"')).map((line) => JSON.parse(line))
    expect(waiting.map(({ variable, address, code }) => ({ variable, address, code }))).toEqual([{ variable: 'DATABASE_URL', address: `127.0.0.1:${port}`, code: 'ECONNREFUSED' }])
    expect(output).not.toMatch(stackLine)
  })

  it('REDIS_URL at a closed port: exit 78 naming REDIS_URL', async () => {
    const port = await closedPort()
    const { code, last, output } = await lastLine(spawnRole('api', baseEnv({ REDIS_URL: `redis://127.0.0.1:${port}` })))
    expect(code).toBe(78)
    expect(last).toBe(`still unreachable after 2 s (STARTUP_TIMEOUT_MS=1500), exiting: REDIS_URL: redis at 127.0.0.1:${port} (ECONNREFUSED)`)
    expect(output).not.toMatch(stackLine)
  })

  it('RPC_URL at a closed port: exit 78 naming RPC_URL; CHAINS entries by index', async () => {
    const port = await closedPort()
    const single = await lastLine(spawnRole('follower', baseEnv({ RPC_URL: `http://127.0.0.1:${port}` })))
    expect(single.code).toBe(78)
    expect(single.last).toBe(`still unreachable after 2 s (STARTUP_TIMEOUT_MS=1500), exiting: RPC_URL: rpc at 127.0.0.1:${port} (ECONNREFUSED)`)
    expect(single.output).not.toMatch(stackLine)
    const several = await lastLine(spawnRole('worker', baseEnv({ CHAINS: JSON.stringify([{ chainId: 1, rpcUrl: `http://127.0.0.1:${port}/secret-key` }]) })))
    expect(several.code).toBe(78)
    expect(several.last).toBe(`still unreachable after 2 s (STARTUP_TIMEOUT_MS=1500), exiting: CHAINS[0].rpcUrl: rpc at 127.0.0.1:${port} (ECONNREFUSED)`)
  })

  it('`validate` with PostgreSQL unreachable: one line, exit 78', async () => {
    const port = await closedPort()
    const { code, output } = await lastLine(
      spawnRole('validate' as 'start', baseEnv({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x` }), [`0x${'ab'.repeat(32)}`]),
    )
    expect(code).toBe(78)
    expect(output).toBe(`unreachable: DATABASE_URL: postgres at 127.0.0.1:${port} (ECONNREFUSED)`)
  })
})

describe('settings', () => {
  it('the placeholder CURSOR_SECRET is refused under NODE_ENV=production, in one line', async () => {
    const role = spawnRole('api', baseEnv({ NODE_ENV: 'production' }))
    expect(await role.exited).toBe(78)
    expect(role.output()).toBe(
      'CURSOR_SECRET: the placeholder is refused with NODE_ENV=production; set CURSOR_SECRET to your own secret of at least 16 characters (e.g. openssl rand -hex 24)',
    )
  })

  it('METRICS_PORT serves /metrics for a role without the API', async () => {
    const port = await closedPort()
    const role = spawnRole('worker', baseEnv({ METRICS_PORT: String(port) }))
    try {
      await until('metrics listening', () => {
        if (role.child.exitCode !== null) throw new Error(role.output())
        return role.output().includes('metrics listening')
      }, { intervalMs: 100 })
      const response = await fetch(`http://127.0.0.1:${port}/metrics`)
      expect(response.status).toBe(200)
      expect(await response.text()).toContain('# TYPE indexer_head_block gauge')
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(404)
    } finally {
      role.child.kill('SIGTERM')
      // the role's own lines say why, should it ever exit otherwise (one CI run saw 1, not reproduced in 12 runs)
      expect(await role.exited, role.output()).toBe(0)
    }
  })
})

describe('shutdown', () => {
  let chain: TestChain
  let proxy: RpcProxy
  beforeAll(async () => {
    chain = await startTestChain()
    await chain.mine(30)
    // the worker's block fetches hang: its ranges stay in progress until the shutdown
    const methods = (body: unknown) => (Array.isArray(body) ? body : [body]).map((call) => (call as { method?: string })?.method)
    proxy = await startRpcProxy({ target: chain.rpcUrl, hangMs: 120_000, fault: (body) => (methods(body).every((method) => method === 'eth_chainId') ? 'ok' : 'timeout') })
  }, 120_000)
  afterAll(async () => {
    await proxy?.close()
    await chain?.stop()
  })

  it('`start` with the devnet: SIGTERM exits 0 within 2 s, no stack, anvil gone', async () => {
    const role = spawnRole('start', baseEnv({ DEVNET: 'true', DEVNET_PORT: '0', QUEUE_PREFIX: `${redis.prefix}dev` }))
    await until('a devnet traffic summary', () => {
      if (role.child.exitCode !== null) throw new Error(role.output())
      return role.output().includes('devnet traffic summary')
    }, { intervalMs: 100 })
    const readyLine = role.output().split('\n').find((line) => line.includes('devnet ready'))!
    const rpcUrl = (JSON.parse(readyLine) as { rpc_url: string }).rpc_url

    // the README's validate example: a sample hash from the devnet log, no RPC_URL or chain given
    const minedLine = role.output().split('\n').find((line) => line.includes('sample_tx_hash'))!
    const sample = (JSON.parse(minedLine) as { sample_tx_hash: string }).sample_tx_hash
    const validate = spawnRole('validate' as 'start', { DATABASE_URL: database.url, DEVNET_PORT: new URL(rpcUrl).port, RPC_URL: '', CHAINS: '' }, [sample])
    expect(await validate.exited).toBe(0)
    expect(JSON.parse(validate.output())).toMatchObject({ attributed: true, type: 'transaction', hash: sample, chainId: 31337, status: 'success' })

    const started = Date.now()
    role.child.kill('SIGTERM')
    expect(await role.exited).toBe(0)
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(role.output()).not.toMatch(stackLine)
    await expect(fetch(rpcUrl, { method: 'POST', body: '{}' })).rejects.toThrow('fetch failed')
  }, 120_000)

  it('`worker` with ranges in progress: SIGTERM exits 0 within 2 s and hands them back to the queue', async () => {
    // its own database: the devnet test stored the devnet's genesis for chain 31337 in the shared one
    const workerDatabase = await createTestDatabase('operations_worker')
    const env = indexerEnv({ databaseUrl: workerDatabase.url, redisUrl: redis.url, prefix: `${redis.prefix}w`, extra: { LOG_LEVEL: 'info' } })
    const follower = await startTestIndexer({ db: workerDatabase.db, env, chains: [anvilChain(chain.rpcUrl, { chainId: chain.chainId })], roles: { follower: true, worker: false } })
    const connection = createRedis(redis.url, 'queue')
    const queue = createRangeQueue(connection, `${redis.prefix}w`)
    try {
      const worker = spawnRole('worker', { ...env, CHAINS: chainsEnv([{ ...chain.config, rpcUrl: proxy.url }]) })
      // WORKER_CONCURRENCY 2: eight ranges worked on at once (four per block fetch)
      await until('eight ranges worked on at once', async () => {
        if (worker.child.exitCode !== null) throw new Error(worker.output())
        return (await queue.getJobCounts('active')).active! >= 8
      }, { intervalMs: 100 })
      await follower.stop()
      const waitingBefore = (await queue.getJobCounts('waiting')).waiting!
      const started = Date.now()
      worker.child.kill('SIGTERM')
      expect(await worker.exited).toBe(0)
      expect(Date.now() - started).toBeLessThan(2_000)
      expect(worker.output()).not.toMatch(stackLine)
      expect(worker.output()).toContain('"ranges":8,"msg":"released the ranges in progress to other workers"')
      expect(await queue.getJobCounts('active', 'waiting')).toEqual({ active: 0, waiting: waitingBefore + 8 })
    } finally {
      await queue.close()
      connection.disconnect()
      await workerDatabase.drop()
    }
  }, 120_000)
})
