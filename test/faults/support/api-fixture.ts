import { randomBytes } from 'node:crypto'
import type { Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import type { Database } from '../../../src/db/client.js'
import { request } from '../../support/api.js'
import { freePort } from '../../../devnet/free-port.js'
import { startRole, until, type LoggedRole } from './roles.js'

/** Fresh secrets per run: what the logs and the database must never show. */
export function createSecrets() {
  return {
    adminToken: `admin-${randomBytes(16).toString('hex')}`,
    platformToken: `platform-${randomBytes(16).toString('hex')}`,
    cursorSecret: `cursor-${randomBytes(16).toString('hex')}`,
  }
}

export type Secrets = ReturnType<typeof createSecrets>

export type ApiProcess = { url: string; port: number; role: LoggedRole }

/** `attribution api` (or `start`) as a child process on a free port, once /healthz answers. */
export async function startApiProcess(role: 'api' | 'start', env: Record<string, string>, name: string, port?: number): Promise<ApiProcess> {
  const chosen = port ?? (await freePort())
  const started = startRole(role, { ...env, PORT: String(chosen), HOST: '127.0.0.1' }, name)
  const url = `http://127.0.0.1:${chosen}`
  await until(`${name} answering /healthz`, async () => {
    if (started.child.exitCode !== null) throw new Error(`${name} exited: ${started.output()}`)
    try {
      return (await fetch(`${url}/healthz`)).ok
    } catch {
      return false
    }
  })
  return { url, port: chosen, role: started }
}

export const randomWallet = (): Address => privateKeyToAddress(generatePrivateKey())

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** Operator calls over HTTP, failing loudly when the setup itself does not work. */
export function adminCalls(url: string, adminToken: string) {
  async function call(method: string, path: string, body?: unknown) {
    const response = await request(`${url}${path}`, { method, body, headers: bearer(adminToken) })
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`)
    return response.body
  }
  return {
    createProject: async (name: string, whitelisted = true): Promise<string> => (await call('POST', '/v1/admin/projects', { name, whitelisted })).projectId,
    addApp: async (projectId: string, appUrl: string): Promise<string> => (await call('POST', `/v1/admin/projects/${projectId}/apps`, { app_url: appUrl })).appUrl,
    createKey: async (projectId: string): Promise<{ keyId: string; apiKey: string }> => call('POST', `/v1/admin/projects/${projectId}/api-keys`),
    revokeKey: (keyId: string) => call('DELETE', `/v1/admin/api-keys/${keyId}`),
    deleteProject: (projectId: string) => call('DELETE', `/v1/admin/projects/${projectId}`),
  }
}

export async function pin(url: string, platformToken: string, appUrl: string, wallet: string, pinned: boolean, notificationsEnabled: boolean) {
  const response = await request(`${url}/v1/platform/pins`, {
    method: 'PUT',
    body: { app_url: appUrl, wallet_address: wallet, pinned, notifications_enabled: notificationsEnabled },
    headers: bearer(platformToken),
  })
  if (response.status !== 200) throw new Error(`pin: ${response.status} ${JSON.stringify(response.body)}`)
}

export type NotificationFixture = {
  /** Whitelisted projects A and B, not whitelisted C, deleted D; E is sacrificial (the fuzzer may change it). */
  projects: Record<'A' | 'B' | 'C' | 'D' | 'E', string>
  apps: Record<'A' | 'B' | 'C' | 'E', string>
  keys: Record<'A' | 'B' | 'C' | 'D' | 'E' | 'revokedA', { keyId: string; apiKey: string }>
  /** Wallets pinned to app A with notifications on, pinned with them off, and never pinned. */
  wallets: { enabled: Address[]; disabled: Address[]; strangers: Address[] }
}

/** Projects, apps, keys (one revoked, one of a deleted project) and pins, all through the public API. */
export async function seedNotifications(url: string, secrets: Secrets, suffix = ''): Promise<NotificationFixture> {
  const admin = adminCalls(url, secrets.adminToken)
  const projects = {
    A: await admin.createProject(`A${suffix}`),
    B: await admin.createProject(`B${suffix}`),
    C: await admin.createProject(`C${suffix}`, false),
    D: await admin.createProject(`D${suffix}`),
    E: await admin.createProject(`E${suffix}`),
  }
  const apps = {
    A: await admin.addApp(projects.A, `https://app-a${suffix}.example/play`),
    B: await admin.addApp(projects.B, `https://app-b${suffix}.example`),
    C: await admin.addApp(projects.C, `https://app-c${suffix}.example`),
    E: await admin.addApp(projects.E, `https://app-e${suffix}.example`),
  }
  const keys = {
    A: await admin.createKey(projects.A),
    B: await admin.createKey(projects.B),
    C: await admin.createKey(projects.C),
    D: await admin.createKey(projects.D),
    E: await admin.createKey(projects.E),
    revokedA: await admin.createKey(projects.A),
  }
  await admin.revokeKey(keys.revokedA.keyId)
  await admin.deleteProject(projects.D)
  const wallets = {
    enabled: Array.from({ length: 5 }, randomWallet),
    disabled: Array.from({ length: 3 }, randomWallet),
    strangers: Array.from({ length: 3 }, randomWallet),
  }
  for (const wallet of wallets.enabled) {
    await pin(url, secrets.platformToken, apps.A, wallet, true, true)
    await pin(url, secrets.platformToken, apps.B, wallet, true, true)
  }
  for (const wallet of wallets.disabled) await pin(url, secrets.platformToken, apps.A, wallet, true, false)
  return { projects, apps, keys, wallets }
}

/**
 * Counts every row written to any table, in the writer's transaction (a
 * rolled-back write leaves no count): the proof that a rejected request
 * wrote nothing.
 */
export async function installWriteAudit(db: Database): Promise<void> {
  const sql = db.$client
  await sql`create table if not exists fault_write_audit (id bigserial primary key, table_name text not null, operation text not null)`
  await sql`
    create or replace function fault_write_audit_row() returns trigger language plpgsql as $$
    begin
      insert into fault_write_audit (table_name, operation) values (tg_table_name, tg_op);
      return null;
    end $$`
  const tables = await sql<{ table_name: string }[]>`
    select table_name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' and table_name <> 'fault_write_audit'`
  for (const { table_name: table } of tables) {
    await sql.unsafe(`drop trigger if exists fault_write_audit on "${table}"`)
    await sql.unsafe(`create trigger fault_write_audit after insert or update or delete on "${table}" for each row execute function fault_write_audit_row()`)
  }
}

export async function writesSoFar(db: Database): Promise<number> {
  const [row] = await db.$client<{ n: number }[]>`select count(*)::int as n from fault_write_audit`
  return row!.n
}

/** Row counts of every table: what a whole phase changed. */
export async function rowCounts(db: Database): Promise<Record<string, number>> {
  const tables = await db.$client<{ table_name: string }[]>`
    select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`
  const counts: Record<string, number> = {}
  for (const { table_name: table } of tables) {
    const [row] = await db.$client.unsafe<{ n: number }[]>(`select count(*)::int as n from "${table}"`)
    counts[table] = row!.n
  }
  return counts
}
