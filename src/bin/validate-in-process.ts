/*
 * `attribution validate <hash>` answered in this process (no --api), once its arguments are known
 * good. What it needs before connecting is imported here, statically: Node then reads those files
 * at once, where one `await import` after another (as cli.ts does for the other commands) waits for
 * each file in turn, a few milliseconds apiece on a busy machine. The validation itself (the
 * codec, the validator) loads while PostgreSQL starts a server process for the connection.
 */
import { DEVNET_CHAIN_ID } from '../../devnet/anvil.js'
import { chainOfRpcUrls, loadValidateCommandConfig, type ValidateCommandConfig } from '../config/validate-command.js'
import { connectPostgres } from '../db/connect.js'
import { postgresPatchProblem } from '../db/driver-patch.js'
import type { ValidationRequest } from '../validation/request.js'
import { checkDatabaseReady } from './preflight.js'

/** As checkDatabaseOnce's probe (startup.ts) waits for a connection. */
const ONE_SHOT_CONNECT_TIMEOUT_S = 3

/** Stops the command with one line and exit 78, as cli.ts's one-line errors (known there by name). */
class StartupError extends Error {
  override name = 'StartupError'
}

/**
 * No chain configured and the devnet on: `attribution validate` asks the
 * devnet that `npm start` runs (DEVNET_PORT, chain 31337) for hashes the
 * index does not hold yet, as the API of that process does.
 */
function withDevnetChain(config: ValidateCommandConfig): ValidateCommandConfig {
  if (config.chains.length > 0 || !config.DEVNET) return config
  return { ...config, chains: [chainOfRpcUrls([`http://127.0.0.1:${config.DEVNET_PORT}`], DEVNET_CHAIN_ID)] }
}

/**
 * Prints the validation of `request` as JSON and returns the exit status. A postgres.js without the
 * project's patch or a bad setting (a ConfigError, validate's settings only: config/validate-command.ts)
 * throws, for cli.ts to print as one line with exit 78.
 */
export async function validateInProcess(request: ValidationRequest): Promise<number> {
  const problem = postgresPatchProblem()
  if (problem) throw new StartupError(problem)
  const configured = await loadValidateCommandConfig()
  const config = withDevnetChain(configured)
  const sql = connectPostgres({ url: config.DATABASE_URL, poolSize: 2, connectTimeoutSeconds: ONE_SHOT_CONNECT_TIMEOUT_S })
  try {
    const [{ runValidateRequest }] = await Promise.all([
      import('../validation/cli.js'),
      // checkDatabaseOnce and checkMigrated, with their lines, on the validation's connection (one instead of three)
      checkDatabaseReady(sql, config.DATABASE_URL, 'attributions'),
    ])
    return await runValidateRequest(config, request, sql, process.stdout, { devnetDefault: config !== configured })
  } finally {
    await sql.end({ timeout: 5 })
  }
}
