import { afterAll, beforeAll, expect, it } from 'vitest'
import { request, startTestApi, type TestApi } from './support/api.js'
import { createTestDatabase, type TestDatabase } from './support/services.js'

let database: TestDatabase
let api: TestApi

beforeAll(async () => {
  database = await createTestDatabase('ready')
  // nothing listens on port 1: Redis is unreachable for this server
  api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: 'redis://127.0.0.1:1' })
})

afterAll(async () => {
  await api?.close()
  await database?.drop()
})

it('/readyz answers 503 naming Redis when Redis is unreachable, /healthz still 200', async () => {
  const ready = await request(`${api.url}/readyz`)
  expect(ready.status).toBe(503)
  expect(ready.body).toEqual({ status: 'unavailable', checks: { postgres: true, redis: false }, stuck_ranges: [], refused_reorgs: [] })
  expect((await request(`${api.url}/healthz`)).status).toBe(200)
})
