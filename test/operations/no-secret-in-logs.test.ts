import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort as closedPort } from '../../devnet/free-port.js'
import { until } from '../support/poll.js'
import { spawnRole } from '../support/processes.js'
import { wholeOutput } from '../support/whole-output.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

/**
 * Providers put the API key in the RPC URL, operators the password in the
 * database URL; at LOG_LEVEL=trace every error is logged whole (viem's
 * messages quote the URL they called, drivers the address they tried). The
 * failing paths run here as operators run them, real processes at trace, and
 * every byte they print is searched for the secrets.
 */

const RPC_KEY = 'k3yLeAk9Zq7Xw2Vb8Nc4Md6Pf1Hs5Jt'
const QUERY_KEY = 'qUeRy7Key4Leak2Xw9Vb'
const DB_PASSWORD = 'dbPa55w0rdLeak8Zq'

function expectNoSecret(output: string) {
  for (const secret of [RPC_KEY, QUERY_KEY, DB_PASSWORD, encodeURIComponent(RPC_KEY)]) {
    const at = output.indexOf(secret)
    expect(at, `secret in the log: …${output.slice(Math.max(0, at - 200), at + 60)}…`).toBe(-1)
  }
}

/** A node that answers every call with a 500 and a body naming nothing: viem's error then quotes the URL. */
let failingNode: Server
let failingNodeUrl: string
let database: TestDatabase
let redis: TestRedis
beforeAll(async () => {
  ;[database, redis] = await Promise.all([createTestDatabase('secrets'), createTestRedis()])
  failingNode = createServer((request, response) => {
    request.resume()
    request.on('end', () => response.writeHead(500, { 'content-type': 'text/plain' }).end('upstream broke'))
  })
  await new Promise<void>((resolve) => failingNode.listen(0, '127.0.0.1', resolve))
  failingNodeUrl = `http://127.0.0.1:${(failingNode.address() as AddressInfo).port}/v2/${RPC_KEY}?apikey=${QUERY_KEY}`
})
afterAll(async () => {
  await new Promise((resolve) => failingNode?.close(resolve))
  await redis?.cleanup()
  await database?.drop()
})

/** The test database's URL with a password in it (the server trusts local connections, so it is accepted and ignored). */
function databaseUrlWithPassword(): string {
  const url = new URL(database.url)
  url.password = DB_PASSWORD
  return url.href
}

function traceEnv(extra: Record<string, string>): Record<string, string> {
  return { DATABASE_URL: databaseUrlWithPassword(), REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix, DEVNET: 'false', PORT: '0', LOG_LEVEL: 'trace', STARTUP_TIMEOUT_MS: '1500', ...extra }
}

describe('no secret in any log line at LOG_LEVEL=trace', () => {
  it('a validation that reaches a failing node', async () => {
    const api = spawnRole('api', traceEnv({ RPC_URL: failingNodeUrl, CHAIN_ID: '8453', WS_URL: `wss://127.0.0.1:1/ws/${RPC_KEY}` }))
    const printed = wholeOutput(api)
    const output = printed.text
    try {
      const listening = await until('the API listening', () => output().split('\n').find((line) => line.includes('"msg":"API listening"')), { timeoutMs: 30_000, describe: output })
      const apiUrl = (JSON.parse(listening) as { url: string }).url
      const answer = await fetch(`${apiUrl}/v1/attribution/validate?type=transaction&chainId=8453&hash=0x${'ab'.repeat(32)}`)
      const body = await answer.text()
      expect(answer.status, body).toBe(502)
      expectNoSecret(body)
      // the failure is logged: the line proves the failing path was reached, and is searched with the rest
      await until('the failed validation logged', () => /RPC of chain 8453 failed/.test(output()), { describe: output })
    } finally {
      await api.kill('SIGTERM')
      await printed.complete
    }
    // validation asks through the indexer's RPC stack: its failure names the call and the node's answer
    expect(output()).toContain('RPC of chain 8453 failed: eth_getTransactionByHash: HTTP 500')
    expectNoSecret(output())
  }, 120_000)

  /** A role that must refuse to start (exit 78) on a dead dependency, in a line naming it, with no secret anywhere. */
  async function expectRefusedWithoutSecret(role: Parameters<typeof spawnRole>[0], env: Record<string, string>, line: string) {
    const child = spawnRole(role, traceEnv(env))
    const printed = wholeOutput(child)
    expect(await child.exited).toBe(78)
    await printed.complete
    expect(printed.text()).toContain(line)
    expectNoSecret(printed.text())
  }

  it('a dead RPC at start-up', async () => {
    const port = await closedPort()
    await expectRefusedWithoutSecret(
      'follower',
      { RPC_URL: `http://127.0.0.1:${port}/v3/${RPC_KEY}?apikey=${QUERY_KEY}`, CHAIN_ID: '8453' },
      `RPC_URL: rpc at 127.0.0.1:${port} (ECONNREFUSED)`,
    )
  }, 120_000)

  it('a dead database URL', async () => {
    const port = await closedPort()
    await expectRefusedWithoutSecret(
      'api',
      { DATABASE_URL: `postgres://postgres:${DB_PASSWORD}@127.0.0.1:${port}/x`, RPC_URL: failingNodeUrl, CHAIN_ID: '8453' },
      `DATABASE_URL: postgres at 127.0.0.1:${port} (ECONNREFUSED)`,
    )
  }, 120_000)
})
