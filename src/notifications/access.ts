import { and, eq } from 'drizzle-orm'
import type { Database } from '../db/client.js'
import { notificationApiKeys, notificationApps, notificationProjects } from '../db/schema/index.js'
import { digestsEqual, hashSecret } from './credentials.js'
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
  /** Resolves an `x-api-key` value to its project, by hash, comparing the digest in constant time. */
  async function resolveKey(apiKey: unknown): Promise<KeyProject> {
    if (typeof apiKey !== 'string' || apiKey.length === 0) throw new ApiKeyRejectedError('missing')
    // longer than any issued key: refuse before hashing attacker-sized input
    if (apiKey.length > 200) throw new ApiKeyRejectedError('unknown')
    const keyHash = hashSecret(apiKey)
    const [row] = await db
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
      .where(eq(notificationApiKeys.keyHash, keyHash))
    if (!row || !digestsEqual(row.keyHash, keyHash)) throw new ApiKeyRejectedError('unknown')
    if (row.revokedAt) throw new ApiKeyRejectedError('revoked')
    if (row.deletedAt) throw new KeyProjectDeletedError()
    return { keyId: row.keyId, projectId: row.projectId, whitelisted: row.whitelisted }
  }

  /** Checks that the key's project may act on `appUrl` (already normalized). */
  async function authorizeApp(project: KeyProject, appUrl: string): Promise<AppAccess> {
    const [owned] = await db
      .select({ appUrl: notificationApps.appUrl })
      .from(notificationApps)
      .where(and(eq(notificationApps.appUrl, appUrl), eq(notificationApps.projectId, project.projectId)))
    if (!owned) throw new AppNotInProjectError(appUrl)
    if (!project.whitelisted) throw new ProjectNotWhitelistedError()
    return { projectId: project.projectId, appUrl }
  }

  return { resolveKey, authorizeApp }
}

export type AppAccessControl = ReturnType<typeof createAppAccess>
