/*
 * `attribution validate <hash>` answered in this process (no --api), once its arguments are known
 * good. Everything it needs is imported here, statically: Node then reads the whole set of files at
 * once, where one `await import` after another (as cli.ts does for the other commands) waits for
 * each file in turn, a few milliseconds apiece on a busy machine.
 */
import { DEVNET_CHAIN_ID } from '../../devnet/anvil.js'
import { chainOfRpcUrls, loadValidateCommandConfig, type ValidateCommandConfig } from '../config/validate-command.js'
import { postgresPatchProblem } from '../db/driver-patch.js'
import { runValidateRequest } from '../validation/cli.js'
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
  return runValidateRequest(config, request, process.stdout, {
    devnetDefault: config !== configured,
    // checkDatabaseOnce and checkMigrated, with their lines, on the validation's connection (one instead of three)
    checkDatabase: (sql) => checkDatabaseReady(sql, config.DATABASE_URL, 'attributions'),
    connectTimeoutSeconds: ONE_SHOT_CONNECT_TIMEOUT_S,
  })
}
