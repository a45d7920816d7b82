import { and, eq, sql } from 'drizzle-orm'
import type { Database } from '../db/client.js'
import type { Address } from 'viem'
import { notificationApiKeys, notificationApps, notificationPins, notificationProjects } from '../db/schema/index.js'
import { digestsEqual, hashSecret } from './credentials.js'
import { pinStatusOf, type PinStatus } from './pins.js'
import {
  ApiKeyRejectedError,
  AppNotInProjectError,
  KeyProjectDeletedError,
  ProjectNotWhitelistedError,
} from './errors.js'

/** The project an API key acts for, once the key is known good. */
export type KeyProject = { keyId: string; projectId: string; whitelisted: boolean }

/** A key's project allowed to act on one of its app URLs. */
export type AppAccess = { projectId: string; appUrl: string }

/**
 * Who may call the notification endpoints: a live API key (401 otherwise)
 * whose project still exists (404), is whitelisted and owns the app URL (403).
 */
export function createAppAccess({ db }: { db: Database }) {
  // These lookups run on every notification request: prepared once, so a request pays for neither
  // query building nor parsing. Neither is cached: a revoked key or a removed app fails at once.
  const keyByHash = db
    .select({
      keyId: notificationApiKeys.id,
      keyHash: notificationApiKeys.keyHash,
      revokedAt: notificationApiKeys.revokedAt,
      projectId: notificationProjects.id,
      whitelisted: notificationProjects.whitelisted,
      deletedAt: notificationProjects.deletedAt,
    })
    .from(notificationApiKeys)
    .innerJoin(notificationProjects, eq(notificationProjects.id, notificationApiKeys.projectId))
    .where(eq(notificationApiKeys.keyHash, sql.placeholder('keyHash')))
    .prepare('notification_key_by_hash')
  const appOfProject = db
    .select({ appUrl: notificationApps.appUrl })
    .from(notificationApps)
    .where(and(eq(notificationApps.appUrl, sql.placeholder('appUrl')), eq(notificationApps.projectId, sql.placeholder('projectId'))))
    .prepare('notification_app_of_project')
  // the app check and the wallet's pin of that app in one round trip, for the status endpoint
  const appWithPin = db
    .select({ appUrl: notificationApps.appUrl, pinned: notificationPins.pinned, notificationsEnabled: notificationPins.notificationsEnabled })
    .from(notificationApps)
    .leftJoin(
      notificationPins,
      and(eq(notificationPins.appUrl, notificationApps.appUrl), eq(notificationPins.walletAddress, sql.placeholder('walletAddress'))),
    )
    .where(and(eq(notificationApps.appUrl, sql.placeholder('appUrl')), eq(notificationApps.projectId, sql.placeholder('projectId'))))
    .prepare('notification_app_with_pin')

  /** Resolves an `x-api-key` value to its project, by hash, comparing the digest in constant time. */
  async function resolveKey(apiKey: unknown): Promise<KeyProject> {
    if (typeof apiKey !== 'string' || apiKey.length === 0) throw new ApiKeyRejectedError('missing')
    // longer than any issued key: refuse before hashing attacker-sized input
    if (apiKey.length > 200) throw new ApiKeyRejectedError('unknown')
    const keyHash = hashSecret(apiKey)
    const [row] = await keyByHash.execute({ keyHash })
    if (!row || !digestsEqual(row.keyHash, keyHash)) throw new ApiKeyRejectedError('unknown')
    if (row.revokedAt) throw new ApiKeyRejectedError('revoked')
    if (row.deletedAt) throw new KeyProjectDeletedError()
    return { keyId: row.keyId, projectId: row.projectId, whitelisted: row.whitelisted }
  }

  /** Checks that the key's project may act on `appUrl` (already normalized). */
  async function authorizeApp(project: KeyProject, appUrl: string): Promise<AppAccess> {
    const [owned] = await appOfProject.execute({ appUrl, projectId: project.projectId })
    checkAppAccess(project, appUrl, owned !== undefined)
    return { projectId: project.projectId, appUrl }
  }

  /** `authorizeApp`, then the wallet's pin status for that app, read in the same query. */
  async function authorizedPinStatus(project: KeyProject, appUrl: string, walletAddress: Address): Promise<PinStatus> {
    const [row] = await appWithPin.execute({ appUrl, projectId: project.projectId, walletAddress })
    checkAppAccess(project, appUrl, row !== undefined)
    return pinStatusOf(row)
  }

  return { resolveKey, authorizeApp, authorizedPinStatus }
}

function checkAppAccess(project: KeyProject, appUrl: string, appInProject: boolean): void {
  if (!appInProject) throw new AppNotInProjectError(appUrl)
  if (!project.whitelisted) throw new ProjectNotWhitelistedError()
}

export type AppAccessControl = ReturnType<typeof createAppAccess>
