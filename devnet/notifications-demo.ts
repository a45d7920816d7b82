import { chmod, mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { and, eq, isNull, sql } from 'drizzle-orm'
import { getAddress, type Address } from 'viem'
import type { Database } from '../src/db/client.js'
import { notificationApiKeys, notificationApps } from '../src/db/schema/index.js'
import type { Logger } from '../src/logger.js'
import { createDashboard } from '../src/notifications/dashboard.js'
import { createPins } from '../src/notifications/pins.js'

/*
 * Why this exists: the notification API answers only an API key of a
 * whitelisted project that owns the app, for wallets that pinned the app.
 * On a plain `npm start` nobody has made any of that (the admin and platform
 * routes need tokens a newcomer has not set), so every example of the
 * README's notification section would fail. The devnet start seeds a demo
 * project, app, key and pins here, so those examples answer as written.
 *
 * Only the devnet start calls it (never a configured chain), and it does
 * nothing outside NODE_ENV=development: production never gets a project or
 * a key it did not ask for, and test runs start their own devnets side by
 * side without writing into the working directory.
 */

/** The demo app's URL (normalized), what the README's notification examples name. */
export const DEMO_APP_URL = 'https://demo.devnet.example'
export const DEMO_PROJECT_NAME = 'Devnet demo'
/** Where the demo's API key is written, relative to the directory `npm start` ran in (`.devnet/` is gitignored). */
export const DEMO_FILE = join('.devnet', 'notifications-demo.json')

export type NotificationsDemo = {
  appUrl: string
  projectId: string
  keyId: string
  /** The key's plaintext: in the file only (and in the log if the file cannot be written). */
  apiKey: string
  /** Wallets that pinned the app with notifications on. */
  notifying: Address[]
  /** A wallet that pinned the app with notifications off, so the filters and a refused send show. */
  silent: Address | undefined
}

export type NotificationsDemoOptions = {
  db: Database
  /** The devnet's traffic wallets: the same wallets the README's analytics examples name. */
  wallets: readonly string[]
  nodeEnv: 'development' | 'production' | 'test'
  logger: Logger
  /** The directory the file goes under (default: the working directory, the clone `npm start` ran in). */
  directory?: string
}

/** The demo project: the one owning the demo app URL, made (whitelisted, with the app) if there is none. */
async function demoProjectId(db: Database): Promise<string> {
  const dashboard = createDashboard({ db })
  const [owner] = await db.select({ projectId: notificationApps.projectId }).from(notificationApps).where(eq(notificationApps.appUrl, DEMO_APP_URL))
  if (owner) {
    // a previous run's project: allowed to send again if someone turned it off while trying the admin commands
    await dashboard.setWhitelisted(owner.projectId, true)
    return owner.projectId
  }
  const project = await dashboard.createProject({ name: DEMO_PROJECT_NAME, whitelisted: true })
  await dashboard.addApp(project.projectId, DEMO_APP_URL)
  return project.projectId
}

/**
 * A fresh key each start, the previous runs' demo keys revoked: the
 * plaintext lives in one file, so only the key in that file works.
 */
async function freshDemoKey(db: Database, projectId: string) {
  await db
    .update(notificationApiKeys)
    .set({ revokedAt: sql`now()` })
    .where(and(eq(notificationApiKeys.projectId, projectId), isNull(notificationApiKeys.revokedAt)))
  return createDashboard({ db }).createApiKey(projectId)
}

/** Every wallet but the last pins with notifications on; the last pins with them off. */
async function pinWallets(db: Database, wallets: readonly string[]) {
  const pins = createPins({ db })
  const addresses = wallets.map((wallet) => getAddress(wallet))
  const silent = addresses.length > 1 ? addresses.at(-1) : undefined
  const notifying = silent ? addresses.slice(0, -1) : addresses
  for (const walletAddress of addresses) {
    await pins.upsertPin({ appUrl: DEMO_APP_URL, walletAddress, pinned: true, notificationsEnabled: walletAddress !== silent })
  }
  return { notifying, silent }
}

async function writeDemoFile(path: string, demo: NotificationsDemo): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true })
  await writeFile(path, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 })
  // writeFile's mode applies to a new file only; an older file keeps its own
  await chmod(path, 0o600)
}

/**
 * Seeds the notification demo on the devnet and writes its key to
 * `.devnet/notifications-demo.json`; returns undefined (and does nothing)
 * outside development.
 */
export async function seedNotificationsDemo(options: NotificationsDemoOptions): Promise<NotificationsDemo | undefined> {
  const { db, logger } = options
  if (options.nodeEnv !== 'development') return undefined
  const projectId = await demoProjectId(db)
  const { keyId, apiKey } = await freshDemoKey(db, projectId)
  const { notifying, silent } = await pinWallets(db, options.wallets)
  const demo: NotificationsDemo = { appUrl: DEMO_APP_URL, projectId, keyId, apiKey, notifying, silent }
  const path = join(options.directory ?? process.cwd(), DEMO_FILE)
  const fields = { app_url: DEMO_APP_URL, project_id: projectId, notifying_wallets: notifying.length }
  try {
    await writeDemoFile(path, demo)
    logger.info({ ...fields, api_key_file: path }, `devnet notifications demo: an app, an API key (in ${DEMO_FILE}) and ${notifying.length} wallets that pinned it with notifications on`)
  } catch (error) {
    // a read-only working directory: the key is shown once in the log instead (development only, as above)
    logger.warn({ ...fields, api_key: apiKey, code: (error as NodeJS.ErrnoException).code }, `devnet notifications demo: could not write ${path}; its API key is in this line`)
  }
  return demo
}
