import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Address } from 'viem'
import { Queue } from 'bullmq'
import { DELIVERY_QUEUE_NAME, deliveryJobId } from '../../src/notifications/delivery-queue.js'
import { deliverNotification } from '../../src/notifications/delivery-worker.js'
import {
  adminClient,
  appClient,
  
  lowercase,
  pinAll,
  platformClient,
  randomWallet,
  setupNotifications,
  uppercase,
  type NotificationEnv,
} from './support.js'
import { until } from '../support/poll.js'

/** Sending: per-address results, counts, de-duplication, delivery to the inbox through the queue worker. */
let env: NotificationEnv
let client: ReturnType<typeof appClient>
let appUrl: string

// 900 distinct wallets, sent as 1,000 addresses (100 repeated in other letter cases)
const enabled: Address[] = Array.from({ length: 400 }, randomWallet)
const disabled: Address[] = Array.from({ length: 200 }, randomWallet)
const unpinnedAfterPinning: Address[] = Array.from({ length: 150 }, randomWallet)
const neverPinned: Address[] = Array.from({ length: 150 }, randomWallet)
const duplicates = [
  ...enabled.slice(0, 40).map(lowercase),
  ...disabled.slice(0, 30).map(uppercase),
  ...neverPinned.slice(0, 30).map(lowercase),
]
/** Distinct wallets first, then their repetitions: results keep first-occurrence order. */
const distinct: Address[] = [...enabled, ...disabled, ...unpinnedAfterPinning, ...neverPinned].sort(() => Math.random() - 0.5)
const addresses: string[] = [...distinct, ...duplicates]

const sql = () => env.database.db.$client
const queuedDeliveries = async () => (await sql()`select count(*)::int as n from notification_deliveries where status = 'queued'`)[0]!.n

async function inboxCounts(): Promise<Map<string, number>> {
  const rows = await sql()`select wallet_address, count(*)::int as n from notification_inbox group by wallet_address`
  return new Map(rows.map((row) => [row.wallet_address as string, row.n as number]))
}

beforeAll(async () => {
  env = await setupNotifications({ worker: true })
  const admin = adminClient(env.api)
  const projectId = await admin.createProject('sender')
  appUrl = await admin.addApp(projectId, 'https://sender.example')
  client = appClient(env.api, (await admin.createKey(projectId)).apiKey)
  await pinAll(env.api, appUrl, enabled, { pinned: true, notificationsEnabled: true })
  await pinAll(env.api, appUrl, disabled, { pinned: true, notificationsEnabled: false })
  await pinAll(env.api, appUrl, unpinnedAfterPinning, { pinned: true, notificationsEnabled: true })
  await pinAll(env.api, appUrl, unpinnedAfterPinning, { pinned: false, notificationsEnabled: false })
  expect(addresses.length).toBe(1000)
})

afterAll(async () => {
  await env?.close()
})

const notification = { title: 'Season 2 is live 🎉', message: 'Claim your rewards before Friday.', target_path: '/rewards?from=push' }

describe('POST /v1/notifications/send to 1,000 addresses', () => {
  it('answers per distinct wallet with the contract reasons and counts', async () => {
    const response = await client.send({ app_url: appUrl, wallet_addresses: addresses, ...notification })
    expect(response.status).toBe(200)
    const body = response.body
    expect(body.success).toBe(false)
    expect(body.sentCount).toBe(400)
    expect(body.failedCount).toBe(500)
    expect(body.results).toHaveLength(900)
    expect(body.results.map((result: { walletAddress: string }) => result.walletAddress)).toEqual(distinct)

    const expected = new Map<string, object>()
    for (const wallet of enabled) expected.set(wallet, { walletAddress: wallet, sent: true })
    for (const wallet of disabled) expected.set(wallet, { walletAddress: wallet, sent: false, failureReason: 'user has notifications disabled' })
    for (const wallet of [...unpinnedAfterPinning, ...neverPinned]) {
      expected.set(wallet, { walletAddress: wallet, sent: false, failureReason: 'user has not saved this app' })
    }
    for (const result of body.results) expect(result).toEqual(expected.get(result.walletAddress))
  })

  it('delivers to each sent wallet’s inbox exactly once, and to nobody else', async () => {
    await until('deliveries', async () => (await queuedDeliveries()) === 0)
    const counts = await inboxCounts()
    expect(counts.size).toBe(400)
    for (const wallet of enabled) expect(counts.get(wallet)).toBe(1)

    const platform = platformClient(env.api)
    for (const wallet of [enabled[0]!, enabled[399]!]) {
      const inbox = await platform.inbox(lowercase(wallet))
      expect(inbox.status).toBe(200)
      expect(inbox.body.notifications).toEqual([
        {
          id: expect.any(String),
          appUrl,
          title: notification.title,
          message: notification.message,
          targetPath: notification.target_path,
          sentAt: expect.any(String),
          deliveredAt: expect.any(String),
        },
      ])
      expect(inbox.body).not.toHaveProperty('nextCursor')
    }
    expect((await platform.inbox(disabled[0]!)).body.notifications).toEqual([])
    const [deliveries] = await sql()`select count(*)::int as n, count(*) filter (where status = 'delivered')::int as delivered from notification_deliveries`
    expect(deliveries).toEqual({ n: 400, delivered: 400 })
  })

  it('used one delivery job for the 400 wallets', async () => {
    const [row] = await sql()`select id from notifications`
    const queue = new Queue(DELIVERY_QUEUE_NAME, { connection: env.redis.redis, prefix: env.redis.prefix })
    try {
      const job = await queue.getJob(deliveryJobId(row!.id))
      expect(job?.returnvalue).toEqual({ delivered: 400 })
    } finally {
      await queue.close()
    }
  })

  it('an identical send within 24 h is reported sent but delivers nothing new', async () => {
    const response = await client.send({ app_url: appUrl, wallet_addresses: addresses, ...notification })
    expect(response.status).toBe(200)
    expect(response.body.sentCount).toBe(400)
    expect(response.body.failedCount).toBe(500)
    const [counts] = await sql()`select (select count(*)::int from notifications) as notifications, (select count(*)::int from notification_inbox) as inbox`
    expect(counts).toEqual({ notifications: 1, inbox: 400 })
  })

  it('a different title is a different notification and is delivered', async () => {
    const response = await client.send({ app_url: appUrl, wallet_addresses: addresses, ...notification, title: 'Season 2: last call' })
    expect(response.body.sentCount).toBe(400)
    await until('deliveries', async () => (await queuedDeliveries()) === 0)
    const counts = await inboxCounts()
    for (const wallet of enabled) expect(counts.get(wallet)).toBe(2)
    const inbox = await platformClient(env.api).inbox(enabled[7]!)
    expect(inbox.body.notifications.map((entry: { title: string }) => entry.title)).toEqual(['Season 2: last call', notification.title])
  })

  it('a different target path (or none) is a different notification too', async () => {
    const { target_path: _ignored, ...withoutPath } = notification
    const response = await client.send({ app_url: appUrl, wallet_addresses: enabled.slice(0, 3), ...withoutPath })
    expect(response.body).toMatchObject({ success: true, sentCount: 3, failedCount: 0 })
    await until('deliveries', async () => (await queuedDeliveries()) === 0)
    const inbox = await platformClient(env.api).inbox(enabled[0]!)
    expect(inbox.body.notifications).toHaveLength(3)
    expect(inbox.body.notifications[0]).not.toHaveProperty('targetPath')
  })
})

describe('delivery', () => {
  it('success is true when every address was sent', async () => {
    const response = await client.send({ app_url: appUrl, wallet_addresses: [enabled[10], lowercase(enabled[11]!)], title: 'All of you', message: 'yes' })
    expect(response.body).toEqual({
      success: true,
      results: [
        { walletAddress: enabled[10], sent: true },
        { walletAddress: enabled[11], sent: true },
      ],
      sentCount: 2,
      failedCount: 0,
    })
  })

  it('two identical sends at once deliver once', async () => {
    const wallet = enabled[20]!
    const body = { app_url: appUrl, wallet_addresses: [wallet], title: 'Race', message: 'only once' }
    const responses = await Promise.all(Array.from({ length: 5 }, () => client.send(body)))
    expect(responses.every((response) => response.status === 200 && response.body.sentCount === 1)).toBe(true)
    await until('deliveries', async () => (await queuedDeliveries()) === 0)
    const [row] = await sql()`select count(*)::int as n from notification_inbox i join notifications n on n.id = i.notification_id where n.title = 'Race'`
    expect(row!.n).toBe(1)
  })

  it('re-running a delivery (a retried job) adds no inbox entry', async () => {
    const [notificationRow] = await sql()`select id from notifications order by created_at limit 1`
    const before = (await sql()`select count(*)::int as n from notification_inbox`)[0]!.n
    expect(await deliverNotification(env.database.db, notificationRow!.id)).toEqual({ delivered: 0 })
    // even with its deliveries put back to queued, as if the crash came before they were marked
    await sql()`update notification_deliveries set status = 'queued' where notification_id = ${notificationRow!.id}`
    expect(await deliverNotification(env.database.db, notificationRow!.id)).toEqual({ delivered: 0 })
    expect((await sql()`select count(*)::int as n from notification_inbox`)[0]!.n).toBe(before)
    expect(await queuedDeliveries()).toBe(0)
  })

  it('a delivery whose notification is not committed yet is retried, not dropped', async () => {
    await expect(deliverNotification(env.database.db, '00000000-0000-4000-8000-000000000000')).rejects.toThrow(/not committed/)
  })

  it('the inbox pages newest delivered first with a cursor bound to the wallet', async () => {
    const wallet = enabled[30]!
    // the inbox is in delivery order; concurrent jobs may deliver in any order, so one at a time here
    for (let index = 0; index < 5; index++) {
      await client.send({ app_url: appUrl, wallet_addresses: [wallet], title: `Paged ${index}`, message: 'page me' })
      await until('deliveries', async () => (await queuedDeliveries()) === 0)
    }
    const platform = platformClient(env.api)
    const titles: string[] = []
    let cursor: string | undefined
    do {
      const page = await platform.inbox(wallet, { limit: '2', ...(cursor ? { cursor } : {}) })
      expect(page.status).toBe(200)
      titles.push(...page.body.notifications.map((entry: { title: string }) => entry.title))
      cursor = page.body.nextCursor
    } while (cursor)
    expect(titles).toEqual(['Paged 4', 'Paged 3', 'Paged 2', 'Paged 1', 'Paged 0', 'Season 2: last call', notification.title])

    const first = await platform.inbox(wallet, { limit: '2' })
    const foreign = await platform.inbox(enabled[31]!, { cursor: first.body.nextCursor })
    expect(foreign.status).toBe(400)
    expect(foreign.body.error.field).toBe('cursor')
  })

  it('the same notification is delivered again once 24 h have passed', async () => {
    const wallet = enabled[50]!
    const body = { app_url: appUrl, wallet_addresses: [wallet], title: 'Daily digest', message: 'same every day' }
    await client.send(body)
    await until('deliveries', async () => (await queuedDeliveries()) === 0)
    const digests = async () =>
      (await sql()`select count(*)::int as n from notification_inbox i join notifications n on n.id = i.notification_id
                    where n.title = 'Daily digest' and i.wallet_address = ${wallet}`)[0]!.n
    await client.send(body)
    await until('deliveries', async () => (await queuedDeliveries()) === 0)
    expect(await digests()).toBe(1)
    // age yesterday's delivery past the window
    await sql()`update notification_deliveries d set created_at = now() - interval '24 hours 1 minute'
                  from notifications n where n.id = d.notification_id and n.title = 'Daily digest'`
    expect((await client.send(body)).body.sentCount).toBe(1)
    await until('deliveries', async () => (await queuedDeliveries()) === 0)
    expect(await digests()).toBe(2)
  })
})
