import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type { Config } from '../config/env.js'
import type { Logger } from '../logger.js'
import type { Role } from './roles.js'

/*
 * Only what every command needs is imported here; each command imports the
 * rest itself (below, with `await import`). `--help` and `decode` then load
 * a few modules instead of the server, the indexer, the drivers and the
 * devnet: a fraction of a second instead of seconds.
 */
const usage = `Usage: attribution <command> [options]

Commands:
  start                 run everything in one process: migrations, follower, workers and API
  api                   run the HTTP API only
  follower              run the chain follower only
  worker                run pipeline workers only
  migrate               create the database if needed and apply migrations
  decode <calldata>     print the ERC-8021 attribution of hex calldata as JSON
  validate <hash> [--type transaction|userOperation] [--chain <id>] [--api <url>]
                        validate a hash's attribution (index, else RPC) as JSON; exit 1 when not attributed or not found;
                        --api asks a running daemon's API (e.g. http://127.0.0.1:3000) instead: much quicker
  admin <subcommand>    notification projects, app URLs and API keys, as JSON (admin --help)
`

function fail(message: string, exitCode = 1): never {
  process.stderr.write(`${message}\n`)
  process.exit(exitCode)
}

async function readConfig(): Promise<Config> {
  const { loadConfig } = await import('../config/env.js')
  try {
    return loadConfig()
  } catch (error) {
    if ((error as Error).name === 'ConfigError') fail((error as Error).message, 78)
    throw error
  }
}

const rolesByCommand: Record<string, Role[]> = {
  start: ['api', 'follower', 'worker'],
  api: ['api'],
  follower: ['follower'],
  worker: ['worker'],
}

/**
 * Pagination cursors are signed with CURSOR_SECRET. Unset, production refuses to start (a published
 * secret lets anyone forge cursors); elsewhere the daemon uses a secret it generated once and keeps in
 * the project's .cursor-secret (gitignored), so a development run needs no setting and no warning.
 */
async function withCursorSecret(config: Config, logger: Logger): Promise<Config> {
  const { DEVELOPMENT_CURSOR_SECRET_FILE, PLACEHOLDER_CURSOR_SECRET, developmentCursorSecret } = await import('../config/env.js')
  const { StartupError } = await import('./startup.js')
  if (config.CURSOR_SECRET !== PLACEHOLDER_CURSOR_SECRET) return config
  if (config.NODE_ENV === 'production') {
    throw new StartupError('CURSOR_SECRET: the placeholder is refused with NODE_ENV=production; set CURSOR_SECRET to your own secret of at least 16 characters (e.g. openssl rand -hex 24)')
  }
  const file = join(projectRoot(), DEVELOPMENT_CURSOR_SECRET_FILE)
  const { secret, created } = developmentCursorSecret(file)
  if (created) logger.info({ file }, 'generated a development CURSOR_SECRET (kept for later runs; set CURSOR_SECRET in production)')
  return { ...config, CURSOR_SECRET: secret }
}

/** The folder holding package.json: the same for the sources (src/bin) and the compiled code (dist/src/bin). */
function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir)
  return dir
}

/**
 * Log lines reach stdout until the last one ('stopped'): a line from work abandoned at the
 * shutdown (a devnet batch in flight, a late timer) is dropped instead of following it.
 */
async function closableStdout() {
  const { pino } = await import('pino')
  // synchronous: with an asynchronous write still in flight at the exit, the exit's flush can put the last line
  // ('stopped') ahead of lines logged before it (seen in CI: a devnet line after 'stopped')
  const stdout = pino.destination({ dest: 1, sync: true })
  let open = true
  return {
    destination: { write: (line: string) => void (open && stdout.write(line)) },
    close: () => {
      open = false
    },
  }
}

/** SIGTERM/SIGINT to exit, at most: orchestrators wait a few seconds before SIGKILL, people at a terminal less. */
const SHUTDOWN_DEADLINE_MS = 1_800

async function runDaemon(command: string) {
  const config = await readConfig()
  const { limitHeapGrowth } = await import('./heap-growth.js')
  limitHeapGrowth(config.HEAP_GROWTH_PERCENT)
  const { configuredUrls, createLogger } = await import('../logger.js')
  const { dependenciesOf, waitForDependencies } = await import('./startup.js')
  const output = await closableStdout()
  // CHAINS may be a file: the URLs it names are secrets the environment alone does not show
  const logger = createLogger({ level: config.LOG_LEVEL, name: `attribution:${command}`, destination: output.destination, secretUrls: configuredUrls(config) })
  /** The process's last line, and its exit. */
  const exitWith = (code: number, line: () => void) => {
    line()
    output.close()
    process.exit(code)
  }
  const { exitOnUnhandled } = await import('./last-resort.js')
  exitOnUnhandled(logger, exitWith)
  const roles = new Set(rolesByCommand[command])
  const indexing = roles.has('follower') || roles.has('worker')
  // a signal while starting (waiting for a dependency, deploying the devnet) needs nothing released yet
  const duringStartup = (signal: string) => exitWith(0, () => logger.info({ signal }, 'stopped while starting'))
  process.once('SIGTERM', duringStartup).once('SIGINT', duringStartup)
  const settings = roles.has('api') ? await withCursorSecret(config, logger) : config
  await waitForDependencies(dependenciesOf(settings, { indexing }), { timeoutMs: settings.STARTUP_TIMEOUT_MS, logger })
  // the devnet (and with it the contracts' artifacts) is imported by roles.ts only when it starts one
  const { runRoles } = await import('./roles.js')
  const running = await runRoles(settings, roles, logger)
  let stopping = false
  const shutdown = (signal: string) => {
    if (stopping) return
    stopping = true
    const started = Date.now()
    logger.info({ signal }, 'shutting down')
    // whatever is still open by then (a call to a hung node, a slow query) is cut by the exit: ranges in
    // progress were already handed back to the queue, locks and connections end with the process
    const deadline = setTimeout(() => {
      exitWith(0, () => logger.warn({ took_ms: Date.now() - started, deadline_reached: true }, 'stopped'))
    }, SHUTDOWN_DEADLINE_MS)
    deadline.unref()
    running.stop().then(
      () => exitWith(0, () => logger.info({ took_ms: Date.now() - started }, 'stopped')),
      (error) => exitWith(1, () => logger.error({ err: error }, 'shutdown failed')),
    )
  }
  process.off('SIGTERM', duringStartup).off('SIGINT', duringStartup)
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))
}

/** One-shot commands try PostgreSQL once: a person waiting at a prompt wants the answer, not a retry loop. */
async function checkDatabaseOnce(config: Config) {
  const { createLogger } = await import('../logger.js')
  const { dependenciesOf, waitForDependencies } = await import('./startup.js')
  await waitForDependencies(dependenciesOf(config, { indexing: false, redis: false }), { timeoutMs: 0, logger: createLogger({ level: 'silent' }) })
}

// validate checks the driver itself (validate-in-process.ts): `--api` and a usage error never load it
const commandsUsingPostgres = new Set(['start', 'api', 'follower', 'worker', 'migrate', 'admin'])

async function main(argv: string[]) {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, strict: false })
  const [command, ...rest] = positionals
  if (command && commandsUsingPostgres.has(command)) {
    const { postgresPatchProblem } = await import('../db/driver-patch.js')
    const problem = postgresPatchProblem()
    if (problem) fail(problem, 78)
  }
  switch (command) {
    case 'start':
    case 'api':
    case 'follower':
    case 'worker':
      return runDaemon(command)
    case 'migrate': {
      const config = await readConfig()
      await checkDatabaseOnce(config)
      const { migrateDatabase } = await import('../db/migrate.js')
      await migrateDatabase(config.DATABASE_URL)
      process.stdout.write(`${JSON.stringify({ migrated: true })}\n`)
      return
    }
    case 'decode': {
      const calldata = rest[0]
      if (!calldata) fail(`decode needs a calldata argument\n\n${usage}`, 64)
      if (!/^0x([0-9a-fA-F]{2})*$/.test(calldata)) fail('calldata must be 0x-prefixed hex of whole bytes', 64)
      const { decodeAttribution } = await import('../attribution/decode.js')
      const result = decodeAttribution(calldata)
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
      process.exitCode = result.kind === 'attributed' ? 0 : 1
      return
    }
    case 'validate': {
      // raw arguments: --type, --chain and --api take values
      const validateArgs = argv.slice(argv.indexOf('validate') + 1)
      // both small, read at once
      const [{ asksTheApi, validateThroughApi }, { parseValidateArgs }] = await Promise.all([import('./validate-through-api.js'), import('../validation/cli-args.js')])
      if (asksTheApi(validateArgs)) {
        process.exitCode = await validateThroughApi(validateArgs, process.stdout)
        return
      }
      // a usage error is answered before anything connects
      const parsed = parseValidateArgs(validateArgs)
      if ('body' in parsed) {
        process.stdout.write(`${JSON.stringify(parsed.body, null, 2)}\n`)
        process.exitCode = parsed.exitCode
        return
      }
      const { validateInProcess } = await import('./validate-in-process.js')
      process.exitCode = await validateInProcess(parsed.request)
      return
    }
    case 'admin': {
      // raw arguments: the subcommand parses its own options (--name, --whitelisted …)
      const adminArgs = argv.slice(argv.indexOf('admin') + 1)
      // usage (--help, or no subcommand: 64) needs no database
      const usageOnly = !adminArgs.some((arg) => !arg.startsWith('-')) || adminArgs.includes('--help') || adminArgs.includes('-h')
      if (!usageOnly) {
        const config = await readConfig()
        await checkDatabaseOnce(config)
        const { checkMigrated } = await import('./preflight.js')
        await checkMigrated(config.DATABASE_URL, 'notification_projects')
      }
      const { runAdminCommand } = await import('./admin.js')
      return runAdminCommand(adminArgs)
    }
    case undefined:
    case 'help':
    case '--help':
      process.stdout.write(usage)
      return
    default:
      fail(`Unknown command: ${command}\n\n${usage}`, 64)
  }
}

/** Expected conditions that stop a command with one line and exit 78 (EX_CONFIG), known by name so none of their modules need loading here. */
const ONE_LINE_ERRORS = new Set(['StartupError', 'ConfigError', 'AnvilStartError', 'ChainIdentityError'])
const STARTUP_EXIT_CODE = 78

main(process.argv.slice(2)).catch((error) => {
  // expected conditions (a dependency unreachable, anvil's port taken, a node serving another chain): one line
  if (error instanceof Error && ONE_LINE_ERRORS.has(error.name)) {
    process.stderr.write(`${error.message.split('\n')[0]}\n`)
    process.exit(STARTUP_EXIT_CODE)
  }
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
