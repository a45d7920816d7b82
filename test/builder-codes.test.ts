import { getAddress, type Address } from 'viem'
import { privateKeyToAddress, generatePrivateKey } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { builderCodes } from '../src/db/schema/index.js'
import { deriveBuilderCode } from '../src/registry/derive.js'
import { createRegistry } from '../src/registry/register.js'
import { request, startTestApi, type TestApi } from './support/api.js'
import { createTestDatabase, type TestDatabase } from './support/services.js'
import { inject } from 'vitest'

const randomWallet = (): Address => privateKeyToAddress(generatePrivateKey())

let database: TestDatabase
let api: TestApi

async function restartApi() {
  await api?.close()
  api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: inject('redisUrl') })
}

const register = (body: unknown) => request(`${api.url}/v1/agents/builder-codes`, { method: 'POST', body })

beforeAll(async () => {
  database = await createTestDatabase('codes')
  await restartApi()
})

afterAll(async () => {
  await api?.close()
  await database?.drop()
})

describe('POST /v1/agents/builder-codes', () => {
  it('returns the contract body with an EIP-55 address', async () => {
    const wallet = randomWallet()
    const response = await register({ walletAddress: wallet.toLowerCase() })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ builderCode: expect.stringMatching(/^bc_[0-9a-z]{8}$/), walletAddress: wallet })
    expect(response.body.builderCode).toBe(deriveBuilderCode(wallet))
  })

  it('is idempotent and case-insensitive', async () => {
    const wallet = randomWallet()
    const codes = new Set<string>()
    for (const variant of [wallet, wallet.toLowerCase(), `0x${wallet.slice(2).toUpperCase()}`]) {
      const response = await register({ walletAddress: variant })
      expect(response.status).toBe(200)
      expect(response.body.walletAddress).toBe(wallet)
      codes.add(response.body.builderCode)
    }
    expect(codes.size).toBe(1)
  })

  it('accepts wallet_address as an alias', async () => {
    const wallet = randomWallet()
    const response = await register({ wallet_address: wallet })
    expect(response.status).toBe(200)
    expect(response.body.walletAddress).toBe(wallet)
  })

  it('keeps the same code across a server restart', async () => {
    const wallet = randomWallet()
    const before = await register({ walletAddress: wallet })
    await restartApi()
    const after = await register({ walletAddress: wallet })
    expect(after.body.builderCode).toBe(before.body.builderCode)
  })

  it('100 concurrent requests for a new wallet give one code and one row', async () => {
    const wallet = randomWallet()
    const responses = await Promise.all(Array.from({ length: 100 }, () => register({ walletAddress: wallet })))
    expect(responses.every((r) => r.status === 200)).toBe(true)
    expect(new Set(responses.map((r) => r.body.builderCode)).size).toBe(1)
    const rows = await database.db.$client`select count(*)::int as n from builder_codes where wallet_address = ${wallet}`
    expect(rows[0]!.n).toBe(1)
  })

  it('steps to the next deterministic candidate when the first is taken by another wallet', async () => {
    const wallet = randomWallet()
    const squatter = randomWallet()
    await database.db.insert(builderCodes).values({ code: deriveBuilderCode(wallet, 0), walletAddress: squatter })
    const response = await register({ walletAddress: wallet })
    expect(response.status).toBe(200)
    expect(response.body.builderCode).toBe(deriveBuilderCode(wallet, 1))
    expect(response.body.builderCode).not.toBe(deriveBuilderCode(wallet, 0))
    // the squatter's code never changed
    const lookup = await request(`${api.url}/v1/agents/builder-codes/${deriveBuilderCode(wallet, 0)}`)
    expect(lookup.body.walletAddress).toBe(squatter)
  })

  it('resolves collisions through an injected deriver that always collides first', async () => {
    const registry = createRegistry({
      db: database.db,
      deriveCandidate: (wallet, attempt) => (attempt === 0 ? 'bc_collide0' : deriveBuilderCode(wallet, attempt)),
    })
    const first = await registry.register(randomWallet())
    const second = await registry.register(randomWallet())
    expect(first.builderCode).toBe('bc_collide0')
    expect(second.builderCode).not.toBe('bc_collide0')
    expect(second.builderCode).toMatch(/^bc_[0-9a-z]{8}$/)
  })

  it('concurrent new wallets share inserts: each gets one code, a shared first candidate goes to one wallet, one creation per wallet', async () => {
    const registry = createRegistry({
      db: database.db,
      deriveCandidate: (wallet, attempt) => (attempt === 0 ? 'bc_shared00' : deriveBuilderCode(wallet, attempt)),
    })
    const wallets = Array.from({ length: 60 }, randomWallet)
    // every wallet asked twice at once: the second ask of a wallet may land in the same group as its first
    const results = await Promise.all([...wallets, ...wallets].map((wallet) => registry.register(wallet)))
    const codeOf = new Map<string, Set<string>>()
    for (const result of results) codeOf.set(result.walletAddress, (codeOf.get(result.walletAddress) ?? new Set()).add(result.builderCode))
    expect([...codeOf.values()].every((codes) => codes.size === 1)).toBe(true)
    expect(new Set([...codeOf.values()].map((codes) => [...codes][0])).size).toBe(wallets.length)
    expect(results.filter((result) => result.builderCode === 'bc_shared00')).toHaveLength(2)
    expect(results.filter((result) => result.created)).toHaveLength(wallets.length)
    const rows = await database.db.$client<{ n: number }[]>`
      select count(*)::int as n from builder_codes where wallet_address = any(${wallets.map((w) => getAddress(w))}::text[])`
    expect(rows[0]!.n).toBe(wallets.length)
  })

  const badBodies: Array<[string, unknown, RegExp]> = [
    ['missing address', {}, /walletAddress: is required/],
    ['non-string address', { walletAddress: 42 }, /walletAddress: must be a string/],
    ['non-hex address', { walletAddress: `0x${'zz'.repeat(20)}` }, /walletAddress: must be 0x followed by 40/],
    ['short address', { walletAddress: '0x1234' }, /walletAddress/],
    ['long address', { walletAddress: `0x${'ab'.repeat(21)}` }, /walletAddress/],
    ['no 0x prefix', { walletAddress: 'ab'.repeat(20) }, /walletAddress/],
    ['bad alias', { wallet_address: 'nope' }, /walletAddress/],
    ['array body', [1, 2], /body|walletAddress/],
  ]
  for (const [name, body, message] of badBodies) {
    it(`400 for ${name}`, async () => {
      const before = await database.db.$client`select count(*)::int as n from builder_codes`
      const response = await register(body)
      expect(response.status).toBe(400)
      expect(response.body.success).toBe(false)
      expect(response.body.error.message).toMatch(message)
      const after = await database.db.$client`select count(*)::int as n from builder_codes`
      expect(after[0]!.n).toBe(before[0]!.n)
    })
  }

  it('400 for malformed JSON', async () => {
    const response = await request(`${api.url}/v1/agents/builder-codes`, { method: 'POST', rawBody: '{"walletAddress":' })
    expect(response.status).toBe(400)
    expect(response.body.error.message).toMatch(/JSON/)
  })

  it('413 for a body over the limit', async () => {
    const response = await register({ walletAddress: randomWallet(), padding: 'x'.repeat(2_000_000) })
    expect(response.status).toBe(413)
    expect(response.body.success).toBe(false)
  })
})

describe('GET /v1/agents/builder-codes/:code', () => {
  it('returns the code and its wallet', async () => {
    const wallet = randomWallet()
    const { body } = await register({ walletAddress: wallet })
    const response = await request(`${api.url}/v1/agents/builder-codes/${body.builderCode}`)
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ builderCode: body.builderCode, walletAddress: getAddress(wallet) })
  })

  it('404 when unknown', async () => {
    const response = await request(`${api.url}/v1/agents/builder-codes/bc_00000000`)
    expect(response.status).toBe(404)
    expect(response.body).toMatchObject({ success: false, error: { code: 'not_found' } })
  })
})

describe('service routes', () => {
  it('serves an OpenAPI document listing the routes and a docs page', async () => {
    const spec = await request(`${api.url}/openapi.json`)
    expect(spec.status).toBe(200)
    expect(spec.body.openapi).toMatch(/^3\./)
    expect(Object.keys(spec.body.paths)).toContain('/v1/agents/builder-codes')
    const docs = await fetch(`${api.url}/docs/`)
    expect(docs.status).toBe(200)
  })

  it('answers unknown routes with the shared error shape', async () => {
    const response = await request(`${api.url}/v1/nope`)
    expect(response.status).toBe(404)
    expect(response.body.success).toBe(false)
  })

  it('healthz and readyz answer 200 when everything is up', async () => {
    expect((await request(`${api.url}/healthz`)).status).toBe(200)
    const ready = await request(`${api.url}/readyz`)
    expect(ready.status).toBe(200)
    expect(ready.body.checks).toEqual({ postgres: true, redis: true })
  })
})
