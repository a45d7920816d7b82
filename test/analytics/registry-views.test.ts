import { getAddress, type Address } from 'viem'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { builderCodes } from '../../src/db/schema/index.js'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { cutAndCommit, labelHash } from '../support/ranges.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'

/**
 * A code is identified with its registry: the same spelling in this
 * service's registry and in a custom one are two codes, and every code
 * route takes `registry` to read one of them. Every address in every answer
 * and export is EIP-55, whatever the case it was stored in.
 */
let database: TestDatabase
let api: TestApi

// lowercase on purpose, with letters, so a missing checksum shows
const senderA = '0xabcdefabcdefabcdefabcdefabcdefabcdefabcd' as Address
const senderB = '0xfedcbafedcbafedcbafedcbafedcbafedcbafedc' as Address
const customRegistry = { chainId: 31337, address: '0x00000000000000000000000000000000000a0de5' as Address }
const customLabel = `31337:${getAddress(customRegistry.address)}`
const wallet = '0xdeaddeaddeaddeaddeaddeaddeaddeaddeaddead'
const now = Math.floor(Date.now() / 1000)

beforeAll(async () => {
  database = await createTestDatabase('registry_views')
  // chain 31337 configured for validation; its node is never asked: the hashes are in the index
  api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: inject('redisUrl'), env: { RPC_URL: 'http://127.0.0.1:9', CHAIN_ID: '31337' } })
  await database.db.insert(builderCodes).values({ code: 'zora', walletAddress: getAddress(wallet) })
  // `zora` twice in this service's registry, three times in a custom one (one of them a UserOperation)
  await cutAndCommit(database.db, {
    chainId: 31337,
    fromBlock: 1,
    toBlock: 1,
    branch: 'a',
    items: [
      { tx: 'c1', code: 'zora', sender: senderA, timestamp: now, block: 1 },
      { tx: 'c2', code: 'zora', sender: senderB, timestamp: now, block: 1 },
      { tx: 'r1', code: 'zora', sender: senderA, timestamp: now, block: 1, registry: customRegistry },
      { tx: 'r2', code: 'zora', sender: senderB, timestamp: now, block: 1, registry: customRegistry },
      { tx: 'r3', code: 'zora', sender: senderB, timestamp: now, block: 1, registry: customRegistry, kind: 'userOperation', userOpIndex: 0 },
    ],
  })
}, 60_000)

afterAll(async () => {
  await api?.close()
  await database?.drop()
})

const get = (path: string) => request(`${api.url}${path}`)

describe('registry on the code routes', () => {
  it('totals, series and attributions of one registry; all of them added together without it', async () => {
    const all = await get('/v1/analytics/codes/zora')
    expect(all.status).toBe(200)
    expect(all.body.totals.total).toBe(5)
    expect(all.body.registry).toBeUndefined()

    const canonical = await get('/v1/analytics/codes/zora?registry=canonical')
    expect(canonical.body).toMatchObject({ code: 'zora', registry: 'canonical', totals: { transactions: 2, userOperations: 0, total: 2 } })
    // any letter case in, EIP-55 out
    const custom = await get(`/v1/analytics/codes/zora?registry=31337:${customRegistry.address.toUpperCase().replace('0X', '0x')}`)
    expect(custom.body).toMatchObject({ registry: customLabel, totals: { transactions: 2, userOperations: 1, total: 3 } })

    const hourly = await get(`/v1/analytics/codes/zora/hourly?registry=${customLabel}`)
    expect(hourly.body.registry).toBe(customLabel)
    expect(hourly.body.hourly.reduce((sum: number, point: { transactions: number; userOperations: number }) => sum + point.transactions + point.userOperations, 0)).toBe(3)

    const listCanonical = await get('/v1/analytics/codes/zora/attributions?registry=canonical')
    expect(listCanonical.body.attributions.map((row: { registry: string }) => row.registry)).toEqual(['canonical', 'canonical'])
    const listCustom = await get(`/v1/analytics/codes/zora/attributions?registry=${customLabel}`)
    expect(listCustom.body.attributions).toHaveLength(3)
    expect(new Set(listCustom.body.attributions.map((row: { registry: string }) => row.registry))).toEqual(new Set([customLabel]))
    expect((await get('/v1/analytics/codes/zora/attributions')).body.attributions).toHaveLength(5)

    const csv = await fetch(`${api.url}/v1/analytics/codes/zora/attributions?registry=canonical&format=csv`)
    expect((await csv.text()).trim().split('\n')).toHaveLength(3)
  })

  it('a malformed registry is a 400 naming the field, on every code route', async () => {
    for (const path of ['/v1/analytics/codes/zora', '/v1/analytics/codes/zora/hourly', '/v1/analytics/codes/zora/attributions', '/v1/analytics/leaderboard']) {
      for (const bad of ['canon', '31337:0x12', 'x:0x00000000000000000000000000000000000a0de5', '0:0x00000000000000000000000000000000000a0de5']) {
        const answer = await get(`${path}?registry=${encodeURIComponent(bad)}`)
        expect(answer.status, `${path} ${bad}`).toBe(400)
        expect(answer.body.error.field).toBe('registry')
        expect(answer.body.error.message).toMatch(/^registry: must be canonical or <chainId>:<0x address/)
      }
    }
  })

  it('summary?format=csv answers the series as CSV', async () => {
    const response = await fetch(`${api.url}/v1/analytics/summary?window=24h&format=csv`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/csv/)
    expect((await response.text()).split(/\r?\n/)[0]).toBe('start,attributions,transactions,userOperations,reverted')
  })
})

/** Every 0x-address (40 hex digits, not part of a longer hex string) in a text. */
function addressesIn(text: string): string[] {
  return [...text.matchAll(/0x[0-9a-fA-F]{40}(?![0-9a-fA-F])/g)].map((match) => match[0])
}

describe('EIP-55 in every answer', () => {
  it('every address of every analytics, validation and stream answer, JSON and CSV, is EIP-55', async () => {
    const txHash = labelHash('c1')
    const opHash = labelHash('r3op0')
    const paths = [
      '/v1/analytics/codes/zora',
      `/v1/analytics/codes/zora?registry=${customLabel}`,
      '/v1/analytics/codes/zora?format=csv',
      '/v1/analytics/codes/zora/hourly',
      '/v1/analytics/codes/zora/hourly?format=csv',
      '/v1/analytics/codes/zora/attributions',
      '/v1/analytics/codes/zora/attributions?format=csv',
      `/v1/analytics/codes/zora/attributions?registry=${customLabel.toLowerCase()}`,
      '/v1/analytics/leaderboard?window=24h',
      '/v1/analytics/leaderboard?window=all&format=csv',
      '/v1/analytics/summary?window=24h',
      `/v1/attribution/validate?type=transaction&hash=${txHash}&chainId=31337`,
      `/v1/attribution/validate?type=userOperation&hash=${opHash}&chainId=31337`,
      '/v1/agents/builder-codes/zora',
    ]
    const seen: string[] = []
    for (const path of paths) {
      const response = await fetch(`${api.url}${path}`)
      expect(response.status, path).toBe(200)
      const addresses = addressesIn(await response.text())
      for (const address of addresses) expect(address, `${path}`).toBe(getAddress(address))
      seen.push(...addresses)
    }
    // the stream's replay of everything committed
    const controller = new AbortController()
    const stream = await fetch(`${api.url}/v1/attribution/stream?lastEventId=0`, { signal: controller.signal })
    const reader = stream.body!.getReader()
    let text = ''
    while (!text.includes(customLabel)) text += new TextDecoder().decode((await reader.read()).value)
    controller.abort()
    for (const address of addressesIn(text)) expect(address, 'stream').toBe(getAddress(address))
    // the walk met the addresses it had to: both senders, the custom registry, the wallet
    for (const address of [senderA, senderB, customRegistry.address, wallet]) expect(seen).toContain(getAddress(address))
  })
})
