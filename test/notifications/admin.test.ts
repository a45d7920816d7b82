import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runAdmin } from '../../src/bin/admin.js'
import { request } from '../support/api.js'
import { adminClient, appClient, setupNotifications, type NotificationEnv } from './support.js'

/** Dashboard operations over HTTP and as CLI subcommands, and the OpenAPI document. */
let env: NotificationEnv
let admin: ReturnType<typeof adminClient>

beforeAll(async () => {
  env = await setupNotifications()
  admin = adminClient(env.api)
})

afterAll(async () => {
  await env?.close()
})

const MISSING = '00000000-0000-4000-8000-000000000000'

describe('admin API', () => {
  it('creates a project (not whitelisted unless asked)', async () => {
    const response = await admin.call('POST', '/v1/admin/projects', { name: '  My app  ' })
    expect(response.status).toBe(201)
    expect(response.body).toEqual({
      success: true,
      projectId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'My app',
      whitelisted: false,
      createdAt: expect.any(String),
    })
  })

  it('validates its input', async () => {
    expect((await admin.call('POST', '/v1/admin/projects', { name: '' })).body.error.field).toBe('name')
    expect((await admin.call('POST', '/v1/admin/projects', { name: 'x', whitelisted: 'yes' })).body.error.field).toBe('whitelisted')
    const badId = await admin.call('PATCH', '/v1/admin/projects/not-a-uuid', { whitelisted: true })
    expect(badId.status).toBe(400)
    expect(badId.body.error.field).toBe('id')
    const badUrl = await admin.call('POST', `/v1/admin/projects/${await admin.createProject('u')}/apps`, { app_url: 'nope' })
    expect(badUrl.status).toBe(400)
    expect(badUrl.body.error.field).toBe('app_url')
  })

  it('answers 404 for unknown projects and keys', async () => {
    expect((await admin.call('PATCH', `/v1/admin/projects/${MISSING}`, { whitelisted: true })).status).toBe(404)
    expect((await admin.call('DELETE', `/v1/admin/projects/${MISSING}`)).status).toBe(404)
    expect((await admin.call('POST', `/v1/admin/projects/${MISSING}/apps`, { app_url: 'https://x.example' })).status).toBe(404)
    expect((await admin.call('POST', `/v1/admin/projects/${MISSING}/api-keys`)).status).toBe(404)
    expect((await admin.call('DELETE', `/v1/admin/api-keys/${MISSING}`)).status).toBe(404)
  })

  it('registers normalized app URLs, each with one project', async () => {
    const first = await admin.createProject('first')
    const second = await admin.createProject('second')
    const created = await admin.call('POST', `/v1/admin/projects/${first}/apps`, { app_url: 'HTTPS://Shop.Example/Store/' })
    expect(created.status).toBe(201)
    expect(created.body).toEqual({ success: true, projectId: first, appUrl: 'https://shop.example/Store' })
    const again = await admin.call('POST', `/v1/admin/projects/${first}/apps`, { app_url: 'https://shop.example/Store' })
    expect(again.status).toBe(200)
    const taken = await admin.call('POST', `/v1/admin/projects/${second}/apps`, { app_url: 'https://SHOP.example/Store?x=1' })
    expect(taken.status).toBe(409)
    expect(taken.body.error.code).toBe('app_url_taken')
    // deleting the owner releases the URL
    expect((await admin.call('DELETE', `/v1/admin/projects/${first}`)).status).toBe(200)
    expect((await admin.call('POST', `/v1/admin/projects/${second}/apps`, { app_url: 'https://shop.example/Store' })).status).toBe(201)
  })

  it('a deleted project cannot be changed, deleted again, or given apps and keys', async () => {
    const projectId = await admin.createProject('gone')
    expect((await admin.call('DELETE', `/v1/admin/projects/${projectId}`)).body).toEqual({ success: true, projectId, deleted: true })
    expect((await admin.call('DELETE', `/v1/admin/projects/${projectId}`)).status).toBe(404)
    expect((await admin.call('PATCH', `/v1/admin/projects/${projectId}`, { whitelisted: true })).status).toBe(404)
    expect((await admin.call('POST', `/v1/admin/projects/${projectId}/apps`, { app_url: 'https://gone.example' })).status).toBe(404)
    expect((await admin.call('POST', `/v1/admin/projects/${projectId}/api-keys`)).status).toBe(404)
  })

  it('shows a new key once, not cacheable, and revoking twice is fine', async () => {
    const projectId = await admin.createProject('keys')
    const response = await admin.call('POST', `/v1/admin/projects/${projectId}/api-keys`)
    expect(response.status).toBe(201)
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(response.body).toEqual({ success: true, projectId, keyId: expect.any(String), apiKey: expect.stringMatching(/^ank_[A-Za-z0-9_-]{43}$/) })
    const other = await admin.createKey(projectId)
    expect(other.apiKey).not.toBe(response.body.apiKey)
    for (let attempt = 0; attempt < 2; attempt++) {
      expect((await admin.call('DELETE', `/v1/admin/api-keys/${response.body.keyId}`)).status).toBe(200)
    }
  })
})

describe('admin CLI', () => {
  it('runs the same operations and prints JSON', async () => {
    const db = env.database.db
    const run = async (...argv: string[]) => {
      const outcome = await runAdmin(argv, db)
      return { ...outcome, json: outcome.stdout ? JSON.parse(outcome.stdout) : outcome.stderr?.startsWith('{') ? JSON.parse(outcome.stderr) : undefined }
    }
    const project = await run('project', 'create', '--name', 'From the CLI', '--whitelisted')
    expect(project.exitCode).toBe(0)
    expect(project.json).toMatchObject({ success: true, name: 'From the CLI', whitelisted: true })
    const projectId = project.json.projectId

    const app = await run('app', 'add', projectId, 'https://CLI.example/')
    expect(app.json).toEqual({ success: true, projectId, appUrl: 'https://cli.example', created: true })
    const key = await run('key', 'create', projectId)
    expect(key.json).toEqual({ success: true, projectId, keyId: expect.any(String), apiKey: expect.stringMatching(/^ank_/) })

    // the key works against the HTTP API
    const client = appClient(env.api, key.json.apiKey)
    expect((await client.users({ app_url: 'https://cli.example' })).status).toBe(200)

    expect((await run('project', 'whitelist', projectId, '--off')).json.whitelisted).toBe(false)
    expect((await client.users({ app_url: 'https://cli.example' })).status).toBe(403)
    expect((await run('project', 'whitelist', projectId)).json.whitelisted).toBe(true)
    expect((await run('key', 'revoke', key.json.keyId)).json).toEqual({ success: true, keyId: key.json.keyId, projectId, revoked: true })
    expect((await client.users({ app_url: 'https://cli.example' })).status).toBe(401)
    expect((await run('project', 'delete', projectId)).json).toEqual({ success: true, projectId, deleted: true })

    const missing = await run('project', 'delete', projectId)
    expect(missing.exitCode).toBe(1)
    expect(missing.json).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String) } })
    expect((await run('app', 'add', projectId, 'not a url')).exitCode).toBe(1)
    expect((await run('project', 'create')).exitCode).toBe(64)
    expect((await run('project', 'create', '--name', 'x', '--bogus')).exitCode).toBe(64)
    expect((await run('frobnicate', 'now')).exitCode).toBe(64)
  })

  it('is wired into the attribution command', async () => {
    const binary = fileURLToPath(new URL('../../bin/attribution.mjs', import.meta.url))
    const { stdout } = await promisify(execFile)(process.execPath, [binary, 'admin', 'project', 'create', '--name', 'Spawned', '--whitelisted'], {
      env: { ...process.env, DATABASE_URL: env.database.url },
    })
    expect(JSON.parse(stdout)).toMatchObject({ success: true, name: 'Spawned', whitelisted: true })
  })
})

describe('OpenAPI', () => {
  it('documents every notification, admin and platform route with its security', async () => {
    const document = (await request(`${env.api.url}/openapi.json`)).body
    const expected: Array<[string, string, string]> = [
      ['/v1/notifications/app/users', 'get', 'apiKey'],
      ['/v1/notifications/app/user/status', 'post', 'apiKey'],
      ['/v1/notifications/send', 'post', 'apiKey'],
      ['/v1/admin/projects', 'post', 'adminToken'],
      ['/v1/admin/projects/{id}', 'patch', 'adminToken'],
      ['/v1/admin/projects/{id}', 'delete', 'adminToken'],
      ['/v1/admin/projects/{id}/apps', 'post', 'adminToken'],
      ['/v1/admin/projects/{id}/api-keys', 'post', 'adminToken'],
      ['/v1/admin/api-keys/{keyId}', 'delete', 'adminToken'],
      ['/v1/platform/pins', 'put', 'platformToken'],
      ['/v1/platform/inbox', 'get', 'platformToken'],
    ]
    for (const [path, method, scheme] of expected) {
      const operation = document.paths[path]?.[method]
      expect(operation, `${method} ${path}`).toBeDefined()
      expect(operation.security).toEqual([{ [scheme]: [] }])
    }
    const send = document.paths['/v1/notifications/send'].post
    const requestSchema = send.requestBody.content['application/json'].schema
    expect(Object.keys(requestSchema.properties)).toEqual(['app_url', 'wallet_addresses', 'title', 'message', 'target_path'])
    expect(Object.keys(send.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403', '404', '429', '503']))
    expect(Object.keys(document.paths['/v1/notifications/app/user/status'].post.responses)).toContain('500')
  })
})
