/*
 * The settings `attribution validate` reads, checked by hand. loadConfig (env.ts) checks every
 * setting of the service with the schema library, about 95 modules and a good part of a one-shot
 * command's time; validate reads nine of them. Each is checked here by the schema's rule and
 * answered with the schema's message, in its order (validate-command.test.ts holds the two to the
 * same answers). A setting validate does not read is not checked: the daemon's start-up refuses it.
 *
 * CHAINS, a JSON document checked field by field, goes through loadConfig as before.
 */
import { defaultEntryPoints, endpointsFields, parseRpcUrlList, type ChainConfig } from './chain-config.js'
import type { Config } from './env.js'
import { ConfigError } from './errors.js'

/** What validation needs of a chain (src/validation/chains.ts's ChainEndpoint). */
export type ValidationChainConfig = Pick<ChainConfig, 'chainId' | 'rpcUrl' | 'rpcUrls' | 'entryPoints' | 'explorerUrl'>

export type ValidateCommandConfig = Pick<
  Config,
  'DATABASE_URL' | 'CHAINS' | 'RPC_MAX_ANSWER_BYTES' | 'RPC_TIMEOUT_MS' | 'RPC_HTTP_CLIENT' | 'VALIDATE_LOG_WINDOW' | 'DEVNET' | 'DEVNET_PORT'
> & { chains: ValidationChainConfig[] }

/** A setting's value, or why env.ts's schema refuses it (its message). */
type Rule<T> = (raw: string) => { value: T } | { problem: string }

/** As env.ts's z.coerce.number().int(): Number()'s reading, finite, a safe integer, then the range. */
function integer(min: number, max: number, outOfRange: string): Rule<number> {
  return (raw) => {
    const number = Number(raw)
    if (!Number.isFinite(number)) return { problem: 'must be a number' }
    if (!Number.isSafeInteger(number)) return { problem: 'must be an integer' }
    return number < min || number > max ? { problem: outOfRange } : { value: number }
  }
}

const positiveInt = integer(1, Number.MAX_SAFE_INTEGER, 'must be > 0')
const port = integer(0, 65535, 'must be between 0 and 65535')

function oneOf<T extends string>(values: readonly T[], problem: string): Rule<T> {
  return (raw) => ((values as readonly string[]).includes(raw) ? { value: raw as T } : { problem })
}

const booleanFlag: Rule<boolean> = (raw) => {
  const flag = oneOf(['true', 'false', '1', '0', 'yes', 'no'], 'must be true or false')(raw)
  return 'value' in flag ? { value: flag.value === 'true' || flag.value === '1' || flag.value === 'yes' } : flag
}

function urlWithProtocols(protocols: string[]): Rule<string> {
  const problem = `must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`
  return (raw) => {
    try {
      return protocols.includes(new URL(raw).protocol) ? { value: raw } : { problem }
    } catch {
      return { problem }
    }
  }
}

const rpcUrlList: Rule<string[]> = (raw) => {
  const urls = parseRpcUrlList(raw)
  return urls ? { value: urls } : { problem: 'must be an http(s) or ws(s) URL, or several separated by commas' }
}

/** The chain of these endpoints, as loadConfig makes RPC_URL's (with the fields validation reads). */
export function chainOfRpcUrls(urls: readonly string[], chainId: number | undefined): ValidationChainConfig {
  return { chainId, ...endpointsFields(urls), entryPoints: [...defaultEntryPoints] }
}

/** validate's settings from the environment, or a ConfigError naming every bad one (`Invalid configuration: NAME: reason; …`). */
export async function loadValidateCommandConfig(source: NodeJS.ProcessEnv = process.env): Promise<ValidateCommandConfig> {
  // empty counts as unset, as in loadConfig
  if (source.CHAINS) {
    const { loadConfig } = await import('./env.js')
    return loadConfig(source)
  }
  const problems: string[] = []
  function read<T>(name: string, rule: Rule<T>, fallback: T): T {
    const raw = source[name]
    if (raw === undefined || raw === '') return fallback
    const checked = rule(raw)
    if ('value' in checked) return checked.value
    problems.push(`${name}: ${checked.problem}`)
    return fallback
  }
  // read in env.ts's order, so the problems are listed as loadConfig lists them
  const config = {
    DATABASE_URL: read('DATABASE_URL', urlWithProtocols(['postgres:', 'postgresql:']), 'postgres://postgres@127.0.0.1:5432/attribution'),
    rpcUrls: read<string[] | undefined>('RPC_URL', rpcUrlList, undefined),
    chainId: read<number | undefined>('CHAIN_ID', positiveInt, undefined),
    RPC_MAX_ANSWER_BYTES: read('RPC_MAX_ANSWER_BYTES', positiveInt, 256 * 1_048_576),
    RPC_TIMEOUT_MS: read('RPC_TIMEOUT_MS', positiveInt, 10_000),
    RPC_HTTP_CLIENT: read('RPC_HTTP_CLIENT', oneOf(['socket', 'undici'] as const, 'must be socket or undici'), 'socket'),
    VALIDATE_LOG_WINDOW: read('VALIDATE_LOG_WINDOW', positiveInt, 50_000),
    DEVNET: read('DEVNET', booleanFlag, true),
    DEVNET_PORT: read('DEVNET_PORT', port, 8545),
  }
  if (problems.length > 0) throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`)
  const { rpcUrls, chainId, ...settings } = config
  return { ...settings, chains: rpcUrls ? [chainOfRpcUrls(rpcUrls, chainId)] : [] }
}
