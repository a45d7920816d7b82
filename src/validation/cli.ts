/*
 * `attribution validate <hash>` in this process. It imports neither the schema library nor drizzle
 * (the configuration is read by config/validate-command.ts, the index and the registry with plain
 * SQL): a one-shot command's time is mostly the modules it loads.
 */
import type { ValidateCommandConfig } from '../config/validate-command.js'
import { connectPostgres, type Sql } from '../db/connect.js'
import { errorBodyOf, EXIT, parseValidateArgs } from './cli-args.js'
import { ChainSelectionError, HashNotFoundError, RpcTimeoutError, RpcUnavailableError } from './errors.js'
import { registeredWallets } from './registered-wallets.js'
import type { ValidationRequest } from './request.js'
import { createValidator } from './validate.js'

export { EXIT, parseValidateArgs, validateUsage } from './cli-args.js'

type Output = { write(text: string): unknown }

function print(out: Output, value: unknown) {
  out.write(`${JSON.stringify(value, null, 2)}\n`)
}

function failure(error: unknown, nodeHint: string): { exitCode: number; body: ReturnType<typeof errorBodyOf> } | undefined {
  if (error instanceof ChainSelectionError) return { exitCode: EXIT.usage, body: errorBodyOf('invalid_request', error.message, error.field) }
  if (error instanceof HashNotFoundError) return { exitCode: EXIT.notFound, body: errorBodyOf('not_found', error.message) }
  // the index did not hold the hash and the node did not answer: say which node was tried, and what to start
  if (error instanceof RpcTimeoutError) return { exitCode: EXIT.unavailable, body: errorBodyOf('gateway_timeout', `${error.message} ${nodeHint}`) }
  if (error instanceof RpcUnavailableError) return { exitCode: EXIT.unavailable, body: errorBodyOf('bad_gateway', `${error.message} ${nodeHint}`) }
  return undefined
}

/** Which node a failed lookup tried, by the setting that names it, and what would make it answer. */
export function describeNodes(config: Pick<ValidateCommandConfig, 'chains' | 'CHAINS' | 'DEVNET_PORT'>, devnetDefault: boolean): string {
  if (devnetDefault) {
    const host = config.chains[0] ? new URL(config.chains[0].rpcUrl).host : `127.0.0.1:${config.DEVNET_PORT}`
    return `The hash is not in the index, and no node answered at ${host}, where \`npm start\` runs its devnet (DEVNET_PORT): start it with \`npm start\`, or set RPC_URL to a node of the hash's chain.`
  }
  const tried = config.chains.map((chain, index) => `${new URL(chain.rpcUrl).host} (${config.CHAINS ? `CHAINS[${index}].rpcUrl` : 'RPC_URL'})`)
  return `The hash is not in the index; the node tried: ${tried.join(', ')}: check that it runs and answers JSON-RPC.`
}

/**
 * `attribution validate <hash>`: the same answer as GET /v1/attribution/validate,
 * printed as JSON. Returns the exit status; `args` are the arguments after
 * the command name.
 */
export async function runValidateCommand(config: ValidateCommandConfig, args: string[], out: Output = process.stdout, options: { devnetDefault?: boolean } = {}): Promise<number> {
  const parsed = parseValidateArgs(args)
  if ('body' in parsed) {
    print(out, parsed.body)
    return parsed.exitCode
  }
  const sql = connectPostgres({ url: config.DATABASE_URL, poolSize: 2 })
  try {
    return await runValidateRequest(config, parsed.request, sql, out, options)
  } finally {
    await sql.end({ timeout: 5 })
  }
}

/** The validation of a parsed request, read on `sql` (the caller's to end), printed as JSON; returns the exit status. */
export async function runValidateRequest(
  config: ValidateCommandConfig,
  request: ValidationRequest,
  sql: Sql,
  out: Output = process.stdout,
  options: { devnetDefault?: boolean } = {},
): Promise<number> {
  try {
    const validator = createValidator({
      db: { $client: sql },
      registry: registeredWallets(sql),
      chains: config.chains,
      rpcTimeoutMs: config.RPC_TIMEOUT_MS,
      rpcMaxAnswerBytes: config.RPC_MAX_ANSWER_BYTES,
      rpcHttpClient: config.RPC_HTTP_CLIENT,
      logWindow: config.VALIDATE_LOG_WINDOW,
    })
    const result = await validator.validate(request)
    print(out, result)
    return result.attributed ? EXIT.attributed : EXIT.notAttributed
  } catch (error) {
    const known = failure(error, describeNodes(config, options.devnetDefault ?? false))
    if (!known) throw error
    print(out, known.body)
    return known.exitCode
  }
}
