import { and, eq, isNull, sql } from 'drizzle-orm'
import type { Database } from '../db/client.js'
import { notificationApiKeys, notificationApps, notificationProjects } from '../db/schema/index.js'
import { normalizeAppUrl } from './app-url.js'
import { generateApiKey, hashSecret } from './credentials.js'
import { ApiKeyNotFoundError, AppUrlTakenError, ProjectNotFoundError } from './errors.js'

export type Project = { projectId: string; name: string; whitelisted: boolean; createdAt: string }

type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0]

const projectColumns = {
  projectId: notificationProjects.id,
  name: notificationProjects.name,
  whitelisted: notificationProjects.whitelisted,
  createdAt: notificationProjects.createdAt,
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Ids come from operators' hands (CLI arguments, URLs): a malformed one is simply not found. */
function requireUuid(id: string, notFound: (id: string) => Error): void {
  if (!UUID_PATTERN.test(id)) throw notFound(id)
}

function toProject(row: { projectId: string; name: string; whitelisted: boolean; createdAt: Date }): Project {
  return { ...row, createdAt: row.createdAt.toISOString() }
}

/**
 * Dashboard operations on projects, their app URLs and API keys. The admin
 * HTTP routes and the `attribution admin` CLI both call these, so they print
 * and answer the same objects.
 */
export function createDashboard({ db }: { db: Database }) {
  /**
   * Locks a live project row against a concurrent delete for the rest of the
   * transaction, so nothing is attached to a project while it is deleted.
   */
  async function lockLiveProject(tx: Transaction, projectId: string): Promise<void> {
    requireUuid(projectId, (id) => new ProjectNotFoundError(id))
    const [row] = await tx
      .select({ id: notificationProjects.id })
      .from(notificationProjects)
      .where(and(eq(notificationProjects.id, projectId), isNull(notificationProjects.deletedAt)))
      .for('share')
    if (!row) throw new ProjectNotFoundError(projectId)
  }

  async function createProject(input: { name: string; whitelisted?: boolean }): Promise<Project> {
    const [row] = await db
      .insert(notificationProjects)
      .values({ name: input.name, whitelisted: input.whitelisted ?? false })
      .returning(projectColumns)
    return toProject(row!)
  }

  async function setWhitelisted(projectId: string, whitelisted: boolean): Promise<Project> {
    requireUuid(projectId, (id) => new ProjectNotFoundError(id))
    const [row] = await db
      .update(notificationProjects)
      .set({ whitelisted })
      .where(and(eq(notificationProjects.id, projectId), isNull(notificationProjects.deletedAt)))
      .returning(projectColumns)
    if (!row) throw new ProjectNotFoundError(projectId)
    return toProject(row)
  }

  /**
   * Soft-deletes the project: its keys keep resolving (and then answer 404
   * "project gone"), and its app URLs are released so another project can
   * register them.
   */
  async function deleteProject(projectId: string): Promise<{ projectId: string; deleted: true }> {
    requireUuid(projectId, (id) => new ProjectNotFoundError(id))
    return db.transaction(async (tx) => {
      const [row] = await tx
        .update(notificationProjects)
        .set({ deletedAt: sql`now()` })
        .where(and(eq(notificationProjects.id, projectId), isNull(notificationProjects.deletedAt)))
        .returning({ projectId: notificationProjects.id })
      if (!row) throw new ProjectNotFoundError(projectId)
      await tx.delete(notificationApps).where(eq(notificationApps.projectId, projectId))
      return { projectId, deleted: true as const }
    })
  }

  /** Registers an app URL (normalized) with a project; repeating it for the same project is a no-op. */
  async function addApp(projectId: string, rawAppUrl: string): Promise<{ projectId: string; appUrl: string; created: boolean }> {
    const appUrl = normalizeAppUrl(rawAppUrl)
    return db.transaction(async (tx) => {
      await lockLiveProject(tx, projectId)
      const inserted = await tx
        .insert(notificationApps)
        .values({ appUrl, projectId })
        .onConflictDoNothing()
        .returning({ appUrl: notificationApps.appUrl })
      if (inserted.length > 0) return { projectId, appUrl, created: true }
      const [owner] = await tx
        .select({ projectId: notificationApps.projectId })
        .from(notificationApps)
        .where(eq(notificationApps.appUrl, appUrl))
      if (owner?.projectId !== projectId) throw new AppUrlTakenError(appUrl)
      return { projectId, appUrl, created: false }
    })
  }

  /** Issues a key. The plaintext is in the result only; the table holds its SHA-256. */
  async function createApiKey(projectId: string): Promise<{ projectId: string; keyId: string; apiKey: string }> {
    const apiKey = generateApiKey()
    return db.transaction(async (tx) => {
      await lockLiveProject(tx, projectId)
      const [row] = await tx
        .insert(notificationApiKeys)
        .values({ projectId, keyHash: hashSecret(apiKey) })
        .returning({ keyId: notificationApiKeys.id })
      return { projectId, keyId: row!.keyId, apiKey }
    })
  }

  /** Revokes a key; revoking it again keeps the first revocation time. */
  async function revokeApiKey(keyId: string): Promise<{ keyId: string; projectId: string; revoked: true }> {
    requireUuid(keyId, (id) => new ApiKeyNotFoundError(id))
    const [row] = await db
      .update(notificationApiKeys)
      .set({ revokedAt: sql`coalesce(${notificationApiKeys.revokedAt}, now())` })
      .where(eq(notificationApiKeys.id, keyId))
      .returning({ keyId: notificationApiKeys.id, projectId: notificationApiKeys.projectId })
    if (!row) throw new ApiKeyNotFoundError(keyId)
    return { ...row, revoked: true as const }
  }

  return { createProject, setWhitelisted, deleteProject, addApp, createApiKey, revokeApiKey }
}

export type Dashboard = ReturnType<typeof createDashboard>
