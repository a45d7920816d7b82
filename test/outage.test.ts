import { afterAll, beforeAll, expect, it } from 'vitest'
import { createDatabase, closeDatabase, type Database } from '../src/db/client.js'
import { request, startTestApi, type TestApi } from './support/api.js'
import { inject } from 'vitest'

let db: Database
let api: TestApi

beforeAll(async () => {
  // nothing listens on port 1: every query fails to connect
  db = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/none', connectTimeoutSeconds: 1 })
  api = await startTestApi({ db, databaseUrl: 'postgres://postgres@127.0.0.1:1/none', redisUrl: inject('redisUrl') })
})

afterAll(async () => {
  await api?.close()
  await closeDatabase(db).catch(() => {})
})

it('registration answers 503 in the shared error shape when Postgres is unreachable', async () => {
  const response = await request(`${api.url}/v1/agents/builder-codes`, {
    method: 'POST',
    body: { walletAddress: '0xd8da6bf26964af9d7eed9e03e53415d37aa96045' },
  })
  expect(response.status).toBe(503)
  expect(response.body).toMatchObject({ success: false, error: { code: 'service_unavailable' } })
  expect(response.headers.get('retry-after')).toBe('5')
})

it('lookups and analytics answer 503 too, and /readyz names Postgres', async () => {
  expect((await request(`${api.url}/v1/agents/builder-codes/bc_00000000`)).status).toBe(503)
  expect((await request(`${api.url}/v1/analytics/leaderboard`)).status).toBe(503)
  const ready = await request(`${api.url}/readyz`)
  expect(ready.status).toBe(503)
  expect(ready.body.checks.postgres).toBe(false)
})
