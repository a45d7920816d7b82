import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { spawnRole, type RoleProcess } from '../support/processes.js'
import { createTestDatabase, databaseUrlNamed, uniqueName, type TestDatabase } from '../support/services.js'
// a port nothing listens on: bound, read, closed
import { freePort as closedPort } from '../../devnet/free-port.js'

/**
 * What `attribution validate` and `attribution admin` tell a person at a
 * prompt when there is nothing to answer from: which node was tried and
 * what to start, which command migrates, which usage was wrong.
 */

let database: TestDatabase
let unmigrated: { url: string; name: string }
beforeAll(async () => {
  database = await createTestDatabase('one_shot')
  const name = uniqueName('unmigrated')
  const admin = postgres(databaseUrlNamed(inject('databaseUrl'), 'postgres'), { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`create database "${name}"`)
  } finally {
    await admin.end({ timeout: 5 })
  }
  unmigrated = { url: databaseUrlNamed(inject('databaseUrl'), name), name }
})
afterAll(async () => {
  await database?.drop()
  const admin = postgres(databaseUrlNamed(inject('databaseUrl'), 'postgres'), { max: 1, onnotice: () => {} })
  await admin.unsafe(`drop database if exists "${unmigrated.name}" with (force)`).finally(() => admin.end({ timeout: 5 }))
})

const stackLine = /^\s+at\s/m
const hash = `0x${'ab'.repeat(32)}`

async function run(command: string, env: Record<string, string>, args: string[]): Promise<{ code: number | null; output: string }> {
  const role: RoleProcess = spawnRole(command as 'start', { LOG_LEVEL: 'silent', RPC_URL: '', CHAINS: '', ...env }, args)
  return { code: await role.exited, output: role.output() }
}

describe('validate with nothing to answer from', () => {
  it('no devnet running: exit 69, the answer names the node tried and says to start `npm start`', async () => {
    const port = await closedPort()
    const { code, output } = await run('validate', { DATABASE_URL: database.url, DEVNET_PORT: String(port) }, [hash])
    expect(code).toBe(69)
    const body = JSON.parse(output) as { success: false; error: { code: string; message: string } }
    expect(body.error.code).toBe('bad_gateway')
    expect(body.error.message).toContain(`no node answered at 127.0.0.1:${port}, where \`npm start\` runs its devnet (DEVNET_PORT): start it with \`npm start\``)
    expect(output).not.toMatch(stackLine)
  })

  it('a configured node that is down: the answer names RPC_URL and its address', async () => {
    const port = await closedPort()
    const { code, output } = await run('validate', { DATABASE_URL: database.url, RPC_URL: `http://127.0.0.1:${port}`, CHAIN_ID: '1' }, [hash])
    expect(code).toBe(69)
    expect((JSON.parse(output) as { error: { message: string } }).error.message).toContain(`the node tried: 127.0.0.1:${port} (RPC_URL)`)
  })

  it('a database never migrated: exit 78, one line saying to run migrate, no stack', async () => {
    const { code, output } = await run('validate', { DATABASE_URL: unmigrated.url, DEVNET_PORT: String(await closedPort()) }, [hash])
    expect(code).toBe(78)
    expect(output).toBe(
      `DATABASE_URL: database "${unmigrated.name}" is not migrated (it has no attributions table): run \`npx attribution migrate\` (or \`npm run migrate\`; \`npm start\` migrates too)`,
    )
  })
})

describe('admin usage', () => {
  it('no subcommand exits 64 with the usage; --help exits 0', async () => {
    const bare = await run('admin', { DATABASE_URL: database.url }, [])
    expect(bare.code).toBe(64)
    expect(bare.output).toMatch(/^admin needs a subcommand\n/)
    expect(bare.output).toContain('project create --name <name>')
    const help = await run('admin', { DATABASE_URL: database.url }, ['--help'])
    expect(help.code).toBe(0)
    expect(help.output).toMatch(/^Usage: attribution admin <subcommand>/)
  })
})

describe('commands that need nothing running', () => {
  it('--help prints the usage; decode prints the attribution (exit 0), or exits 1 when there is none', async () => {
    const help = await run('--help', {}, [])
    expect(help.code).toBe(0)
    expect(help.output).toMatch(/^Usage: attribution <command> \[options\]/)
    // schema 0, codes "devnet,morpho"
    const attributed = await run('decode', {}, ['0x0c6465766e65742c6d6f7270686f0d0080218021802180218021802180218021'])
    expect(attributed.code).toBe(0)
    expect(JSON.parse(attributed.output)).toMatchObject({ kind: 'attributed', schemaId: 0, codes: ['devnet', 'morpho'] })
    expect((await run('decode', {}, ['0x00'])).code).toBe(1)
    expect(await run('decode', {}, ['0xzz'])).toEqual({ code: 64, output: 'calldata must be 0x-prefixed hex of whole bytes' })
  })
})
