import { parseArgs } from 'node:util'
import { ConfigError, loadConfig } from '../config/env.js'
import { closeDatabase, createDatabase, type Database } from '../db/client.js'
import { InvalidAppUrlError } from '../notifications/app-url.js'
import { createDashboard } from '../notifications/dashboard.js'
import { NotificationDomainError } from '../notifications/errors.js'

export const adminUsage = `Usage: attribution admin <subcommand> (prints JSON)

  project create --name <name> [--whitelisted]   create a project
  project whitelist <projectId> [--off]          allow (or with --off, forbid) it to send notifications
  project delete <projectId>                     delete it: its keys answer 404, its app URLs are released
  app add <projectId> <app_url>                  register an app URL (normalized) with the project
  key create <projectId>                         create an API key (shown once, stored hashed)
  key revoke <keyId>                             revoke an API key

Reads DATABASE_URL like the other commands; run \`attribution migrate\` first.
`

export type AdminOutcome = { exitCode: number; stdout?: string; stderr?: string }

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`

class UsageError extends Error {}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        name: { type: 'string' },
        whitelisted: { type: 'boolean' },
        off: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error))
  }
}

function argument(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`missing ${what}`)
  return value
}

/** Runs one admin subcommand against `db`; returns what to print instead of printing, so tests can call it. */
export async function runAdmin(argv: string[], db: Database): Promise<AdminOutcome> {
  const dashboard = createDashboard({ db })
  try {
    const { positionals, values } = parse(argv)
    if (values.help) return { exitCode: 0, stdout: adminUsage }
    // no subcommand is a usage error (64, as every other one), so a script that forgot it does not pass silently
    if (positionals.length === 0) throw new UsageError('admin needs a subcommand')
    const [noun, verb, first, second] = positionals
    const result = await (async () => {
      switch (`${noun} ${verb}`) {
        case 'project create': {
          const name = values.name?.trim()
          if (!name) throw new UsageError('project create needs --name <name>')
          return dashboard.createProject({ name, whitelisted: values.whitelisted ?? false })
        }
        case 'project whitelist':
          return dashboard.setWhitelisted(argument(first, '<projectId>'), !values.off)
        case 'project delete':
          return dashboard.deleteProject(argument(first, '<projectId>'))
        case 'app add': {
          const { created, ...app } = await dashboard.addApp(argument(first, '<projectId>'), argument(second, '<app_url>'))
          return { ...app, created }
        }
        case 'key create':
          return dashboard.createApiKey(argument(first, '<projectId>'))
        case 'key revoke':
          return dashboard.revokeApiKey(argument(first, '<keyId>'))
        default:
          throw new UsageError(`unknown subcommand: ${positionals.join(' ')}`)
      }
    })()
    return { exitCode: 0, stdout: json({ success: true, ...result }) }
  } catch (error) {
    if (error instanceof UsageError) return { exitCode: 64, stderr: `${error.message}\n\n${adminUsage}` }
    if (error instanceof InvalidAppUrlError) {
      return { exitCode: 1, stderr: json({ success: false, error: { code: 'invalid_request', message: `app_url: ${error.message}` } }) }
    }
    if (error instanceof NotificationDomainError) {
      return { exitCode: 1, stderr: json({ success: false, error: { code: error.code, message: error.message } }) }
    }
    throw error
  }
}

/** `attribution admin …`: connects with DATABASE_URL, runs the subcommand, prints its JSON. */
export async function runAdminCommand(argv: string[]): Promise<void> {
  let config
  try {
    config = loadConfig()
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    process.stderr.write(`${error.message}\n`)
    process.exitCode = 78
    return
  }
  const db = createDatabase({ url: config.DATABASE_URL, poolSize: 1 })
  try {
    const outcome = await runAdmin(argv, db)
    if (outcome.stdout) process.stdout.write(outcome.stdout)
    if (outcome.stderr) process.stderr.write(outcome.stderr)
    process.exitCode = outcome.exitCode
  } finally {
    await closeDatabase(db)
  }
}
