import { createServer as createTcpServer, Socket, type Server as TcpServer } from 'node:net'
import type { Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { createLogger } from '../../src/logger.js'
import { createDeliveryWorker } from '../../src/notifications/delivery-worker.js'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

export const ADMIN_TOKEN = 'admin-token-for-tests-0123456789'
export const PLATFORM_TOKEN = 'platform-token-for-tests-0123456789'

export const randomWallet = (): Address => privateKeyToAddress(generatePrivateKey())

/** Same address, other letter cases: what a careless client sends. */
export const lowercase = (address: string) => address.toLowerCase()
export const uppercase = (address: string) => `0x${address.slice(2).toUpperCase()}`

export type NotificationEnv = {
  database: TestDatabase
  redis: TestRedis
  api: TestApi
  /** Starts another API instance on the same database and Redis prefix. */
  startApi(env?: Record<string, string>, deps?: Parameters<typeof startTestApi>[0]['deps']): Promise<TestApi>
  startWorker(): { close(): Promise<void> }
  close(): Promise<void>
}

/**
 * A database, a Redis prefix, the API (tokens set, a rate limit high enough
 * not to interfere unless `env` lowers it) and optionally the delivery worker.
 */
export async function setupNotifications(options: { env?: Record<string, string>; worker?: boolean } = {}): Promise<NotificationEnv> {
  const database = await createTestDatabase('notif')
  const redis = await createTestRedis()
  const baseEnv = {
    ADMIN_TOKEN,
    PLATFORM_TOKEN,
    QUEUE_PREFIX: redis.prefix,
    RATE_LIMIT_MAX: '1000000',
    ...options.env,
  }
  const apis: TestApi[] = []
  const workers: Array<{ close(): Promise<void> }> = []

  async function startApi(env: Record<string, string> = {}, deps?: Parameters<typeof startTestApi>[0]['deps']) {
    const api = await startTestApi({
      db: deps?.db ?? database.db,
      databaseUrl: database.url,
      redisUrl: redis.url,
      env: { ...baseEnv, ...env },
      deps,
    })
    apis.push(api)
    return api
  }

  function startWorker() {
    const worker = createDeliveryWorker({
      db: database.db,
      redisUrl: redis.url,
      prefix: redis.prefix,
      logger: createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    })
    workers.push(worker)
    return worker
  }

  const api = await startApi()
  if (options.worker) startWorker()

  return {
    database,
    redis,
    api,
    startApi,
    startWorker,
    async close() {
      for (const worker of workers) await worker.close()
      for (const started of apis) await started.close()
      await redis.cleanup()
      await database.drop()
    },
  }
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** Operator calls with the admin token. */
export function adminClient(api: TestApi) {
  const call = (method: string, path: string, body?: unknown) =>
    request(`${api.url}${path}`, { method, body, headers: bearer(ADMIN_TOKEN) })
  return {
    call,
    async createProject(name: string, whitelisted = true): Promise<string> {
      const response = await call('POST', '/v1/admin/projects', { name, whitelisted })
      if (response.status !== 201) throw new Error(`create project: ${response.status} ${JSON.stringify(response.body)}`)
      return response.body.projectId
    },
    async addApp(projectId: string, appUrl: string) {
      const response = await call('POST', `/v1/admin/projects/${projectId}/apps`, { app_url: appUrl })
      if (response.status !== 201 && response.status !== 200) throw new Error(`add app: ${response.status} ${JSON.stringify(response.body)}`)
      return response.body.appUrl as string
    },
    async createKey(projectId: string): Promise<{ keyId: string; apiKey: string }> {
      const response = await call('POST', `/v1/admin/projects/${projectId}/api-keys`)
      if (response.status !== 201) throw new Error(`create key: ${response.status} ${JSON.stringify(response.body)}`)
      return response.body
    },
  }
}

/** Client-app calls with the platform token. */
export function platformClient(api: TestApi) {
  return {
    pin(appUrl: string, wallet: string, pinned: boolean, notificationsEnabled?: boolean) {
      return request(`${api.url}/v1/platform/pins`, {
        method: 'PUT',
        body: { app_url: appUrl, wallet_address: wallet, pinned, notifications_enabled: notificationsEnabled },
        headers: bearer(PLATFORM_TOKEN),
      })
    },
    inbox(wallet: string, query: Record<string, string> = {}) {
      const params = new URLSearchParams({ wallet_address: wallet, ...query })
      return request(`${api.url}/v1/platform/inbox?${params}`, { headers: bearer(PLATFORM_TOKEN) })
    },
  }
}

/** Pins many wallets through the platform API, a few requests at a time. */
export async function pinAll(
  api: TestApi,
  appUrl: string,
  wallets: readonly string[],
  preference: { pinned: boolean; notificationsEnabled: boolean },
  concurrency = 16,
): Promise<void> {
  const platform = platformClient(api)
  let next = 0
  async function lane() {
    while (next < wallets.length) {
      const wallet = wallets[next++]!
      const response = await platform.pin(appUrl, wallet, preference.pinned, preference.notificationsEnabled)
      if (response.status !== 200) throw new Error(`pin: ${response.status} ${JSON.stringify(response.body)}`)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane))
}

/** Calls to the three app-facing endpoints with one API key. */
export function appClient(api: TestApi, apiKey: string | undefined) {
  const headers = (): Record<string, string> => (apiKey === undefined ? {} : { 'x-api-key': apiKey })
  return {
    users(query: Record<string, string>) {
      return request(`${api.url}/v1/notifications/app/users?${new URLSearchParams(query)}`, { headers: headers() })
    },
    status(body: unknown) {
      return request(`${api.url}/v1/notifications/app/user/status`, { method: 'POST', body, headers: headers() })
    },
    send(body: unknown) {
      return request(`${api.url}/v1/notifications/send`, { method: 'POST', body, headers: headers() })
    },
  }
}

/**
 * A TCP proxy in front of the real Redis that a test can freeze (bytes stop
 * flowing, connections stay open: a hung Redis), cut (connections reset,
 * new ones refused: Redis down) or drop (connections reset once).
 */
export async function startRedisProxy(target: string): Promise<{
  url: string
  freeze(): void
  cut(): void
  /** Resets the open connections but accepts new ones: a network blip. */
  drop(): void
  close(): Promise<void>
}> {
  const { hostname, port } = new URL(target)
  let frozen = false
  let cut = false
  const sockets = new Set<Socket>()
  const server: TcpServer = createTcpServer((client) => {
    if (cut) return client.destroy()
    const upstream = new Socket()
    upstream.connect(Number(port || 6379), hostname)
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => {
        sockets.delete(socket)
        client.destroy()
        upstream.destroy()
      })
    }
    client.on('data', (chunk) => {
      if (!frozen) upstream.write(chunk)
    })
    upstream.on('data', (chunk) => {
      if (!frozen) client.write(chunk)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address() as { port: number }
  return {
    url: `redis://127.0.0.1:${address.port}`,
    freeze() {
      frozen = true
    },
    cut() {
      cut = true
      for (const socket of sockets) socket.destroy()
    },
    drop() {
      for (const socket of sockets) socket.destroy()
    },
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
