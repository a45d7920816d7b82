import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Address } from 'viem'
import {
  adminClient,
  appClient,
  lowercase,
  pinAll,
  platformClient,
  randomWallet,
  setupNotifications,
  type NotificationEnv,
} from './support.js'

/** Listing the users of an app: keyset pagination, the notification filter, status. */
let env: NotificationEnv
let client: ReturnType<typeof appClient>
let appUrl: string
let otherAppUrl: string

// 1,234 pinned users: 834 with notifications enabled, 400 without
const enabled: Address[] = Array.from({ length: 834 }, randomWallet)
const disabled: Address[] = Array.from({ length: 400 }, randomWallet)

beforeAll(async () => {
  env = await setupNotifications()
  const admin = adminClient(env.api)
  const projectId = await admin.createProject('listing')
  appUrl = await admin.addApp(projectId, 'https://listing.example/app')
  otherAppUrl = await admin.addApp(projectId, 'https://listing.example/other')
  client = appClient(env.api, (await admin.createKey(projectId)).apiKey)
  // interleaved so that enabled and disabled users are mixed in pin order
  const half = enabled.length / 2
  await pinAll(env.api, appUrl, enabled.slice(0, half), { pinned: true, notificationsEnabled: true })
  await pinAll(env.api, appUrl, disabled, { pinned: true, notificationsEnabled: false })
  await pinAll(env.api, appUrl, enabled.slice(half), { pinned: true, notificationsEnabled: true })
  // noise: the same wallets on another app, and wallets that unpinned
  await pinAll(env.api, otherAppUrl, enabled.slice(0, 50), { pinned: true, notificationsEnabled: true })
})

afterAll(async () => {
  await env?.close()
})

type Page = { users: Array<{ address: string; notificationsEnabled: boolean }>; nextCursor?: string }

/** Reads every page; `between` runs after each page but the last. */
async function readAll(query: Record<string, string>, between?: (pageIndex: number) => Promise<void>): Promise<Page[]> {
  const pages: Page[] = []
  let cursor: string | undefined
  do {
    const response = await client.users({ app_url: appUrl, ...query, ...(cursor ? { cursor } : {}) })
    expect(response.status).toBe(200)
    expect(response.body.success).toBe(true)
    pages.push(response.body)
    cursor = response.body.nextCursor
    if (cursor && between) await between(pages.length - 1)
  } while (cursor)
  return pages
}

const addresses = (pages: Page[]) => pages.flatMap((page) => page.users.map((user) => user.address))

describe('GET /v1/notifications/app/users', () => {
  it('1,234 users at limit 500 come in 3 pages, each exactly once, the last without nextCursor', async () => {
    const pages = await readAll({ limit: '500' })
    expect(pages.map((page) => page.users.length)).toEqual([500, 500, 234])
    expect(pages[2]).not.toHaveProperty('nextCursor')
    const listed = addresses(pages)
    expect(new Set(listed).size).toBe(1234)
    expect(new Set(listed)).toEqual(new Set([...enabled, ...disabled]))
    const disabledSet = new Set<string>(disabled)
    for (const user of pages.flatMap((page) => page.users)) {
      expect(user.notificationsEnabled).toBe(!disabledSet.has(user.address))
    }
  })

  it('users pinning between page requests are neither skipped nor repeated, and old users are all there', async () => {
    const before = addresses(await readAll({ limit: '500' }))
    const added: Address[] = []
    const pages = await readAll({ limit: '500' }, async () => {
      const wallets = Array.from({ length: 30 }, randomWallet)
      added.push(...wallets)
      await pinAll(env.api, appUrl, wallets, { pinned: true, notificationsEnabled: true })
      // and one already-listed user changes its preference: still listed once
      await platformClient(env.api).pin(appUrl, before[0]!, true, false)
    })
    const listed = addresses(pages)
    expect(listed.length).toBe(new Set(listed).size)
    expect(new Set(listed)).toEqual(new Set([...before, ...added]))
    await platformClient(env.api).pin(appUrl, before[0]!, true, !(disabled as string[]).includes(before[0]!))
  })

  it('notification_enabled=true lists only users with notifications on; false or absent lists everyone', async () => {
    const pinnedNow = addresses(await readAll({ limit: '500' }))
    const onlyEnabled = (await readAll({ limit: '500', notification_enabled: 'true' })).flatMap((page) => page.users)
    expect(onlyEnabled.every((user) => user.notificationsEnabled)).toBe(true)
    expect(new Set(onlyEnabled.map((user) => user.address))).toEqual(
      new Set(pinnedNow.filter((address) => !disabled.includes(address as Address))),
    )
    expect(addresses(await readAll({ limit: '500', notification_enabled: 'false' }))).toEqual(pinnedNow)
  })

  it('limit defaults to 100, goes up to 500, and more is refused naming limit (never silently cut)', async () => {
    const byDefault = await client.users({ app_url: appUrl })
    expect(byDefault.body.users.length).toBe(100)
    expect(byDefault.body.nextCursor).toEqual(expect.any(String))
    expect((await client.users({ app_url: appUrl, limit: '500' })).body.users.length).toBe(500)
    for (const limit of ['501', '100000']) {
      const refused = await client.users({ app_url: appUrl, limit })
      expect(refused.status).toBe(400)
      expect(refused.body).toEqual({ success: false, error: { code: 'invalid_request', message: 'limit: must be at most 500', field: 'limit' } })
    }
  })

  it('an unpinned wallet leaves the list and comes back in its old place when it pins again', async () => {
    const first = (await client.users({ app_url: appUrl, limit: '3' })).body.users.map((u: { address: string }) => u.address)
    const platform = platformClient(env.api)
    await platform.pin(appUrl, first[1], false)
    const without = (await client.users({ app_url: appUrl, limit: '3' })).body.users.map((u: { address: string }) => u.address)
    expect(without).not.toContain(first[1])
    await platform.pin(appUrl, first[1], true, true)
    const again = (await client.users({ app_url: appUrl, limit: '3' })).body.users.map((u: { address: string }) => u.address)
    expect(again).toEqual(first)
  })

  it('a tampered cursor, or one from another app or filter, is a 400 naming cursor', async () => {
    const { nextCursor } = (await client.users({ app_url: appUrl, limit: '10' })).body
    const flipped = `${nextCursor.slice(0, 5)}${nextCursor[5] === 'A' ? 'B' : 'A'}${nextCursor.slice(6)}`
    const lastCharFlipped = `${nextCursor.slice(0, -1)}${nextCursor.at(-1) === 'A' ? 'B' : 'A'}`
    const queries: Array<Record<string, string>> = [
      { app_url: appUrl, cursor: flipped },
      { app_url: appUrl, cursor: lastCharFlipped },
      { app_url: appUrl, cursor: `${nextCursor}AA` },
      { app_url: appUrl, cursor: Buffer.from('{"after":5}').toString('base64url') },
      { app_url: otherAppUrl, cursor: nextCursor },
      { app_url: appUrl, cursor: nextCursor, notification_enabled: 'true' },
    ]
    for (const query of queries) {
      const response = await client.users(query)
      expect(response.status, JSON.stringify(query)).toBe(400)
      expect(response.body.error.field).toBe('cursor')
    }
    expect((await client.users({ app_url: appUrl, cursor: nextCursor, limit: '10' })).status).toBe(200)
  })

  it('an app nobody pinned has an empty list without cursor', async () => {
    const admin = adminClient(env.api)
    const projectId = await admin.createProject('empty')
    const emptyApp = await admin.addApp(projectId, 'https://empty.example')
    const response = await appClient(env.api, (await admin.createKey(projectId)).apiKey).users({ app_url: emptyApp })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ success: true, users: [] })
  })
})

describe('POST /v1/notifications/app/user/status', () => {
  it('pinned with notifications on or off, unpinned, never seen; address in any case comes out EIP-55', async () => {
    const platform = platformClient(env.api)
    const unpinned = randomWallet()
    await platform.pin(appUrl, unpinned, true, true)
    await platform.pin(appUrl, unpinned, false)
    const cases: Array<[string, { appPinned: boolean; notificationsEnabled: boolean }]> = [
      [lowercase(enabled[0]!), { appPinned: true, notificationsEnabled: true }],
      [disabled[0]!, { appPinned: true, notificationsEnabled: false }],
      [unpinned, { appPinned: false, notificationsEnabled: false }],
      [randomWallet(), { appPinned: false, notificationsEnabled: false }],
    ]
    for (const [wallet, expected] of cases) {
      const response = await client.status({ app_url: appUrl, wallet_address: wallet })
      expect(response.status).toBe(200)
      expect(response.body).toEqual({ success: true, ...expected })
    }
  })

  it('the same wallet on another app of the project has its own status', async () => {
    const response = await client.status({ app_url: otherAppUrl, wallet_address: disabled[0] })
    expect(response.body).toEqual({ success: true, appPinned: false, notificationsEnabled: false })
  })
})

describe('PUT /v1/platform/pins', () => {
  it('normalizes the address to EIP-55 and the app URL', async () => {
    const wallet = randomWallet()
    const response = await platformClient(env.api).pin('HTTPS://Listing.Example/app/', lowercase(wallet), true, true)
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ success: true, appUrl, walletAddress: wallet, pinned: true, notificationsEnabled: true })
  })

  it('refuses notifications on an unpinned app, and unpinning turns them off', async () => {
    const wallet = randomWallet()
    const platform = platformClient(env.api)
    const refused = await platform.pin(appUrl, wallet, false, true)
    expect(refused.status).toBe(400)
    expect(refused.body.error.field).toBe('notifications_enabled')

    await platform.pin(appUrl, wallet, true, true)
    const unpinned = await platform.pin(appUrl, wallet, false)
    expect(unpinned.body).toMatchObject({ pinned: false, notificationsEnabled: false })
    const status = await client.status({ app_url: appUrl, wallet_address: wallet })
    expect(status.body).toEqual({ success: true, appPinned: false, notificationsEnabled: false })
  })

  it('rejects a bad address and a missing pinned flag', async () => {
    const platform = platformClient(env.api)
    const badAddress = await platform.pin(appUrl, '0xabc', true)
    expect(badAddress.status).toBe(400)
    expect(badAddress.body.error.field).toBe('wallet_address')
    const missing = await platform.pin(appUrl, randomWallet(), undefined as unknown as boolean)
    expect(missing.status).toBe(400)
    expect(missing.body.error.field).toBe('pinned')
  })
})
