import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { loadConfig, type Config } from './env.js'
import { loadValidateCommandConfig } from './validate-command.js'

/** The variables `attribution validate` reads (CHAINS apart: it goes through loadConfig). */
const READ = ['DATABASE_URL', 'RPC_URL', 'CHAIN_ID', 'RPC_MAX_ANSWER_BYTES', 'RPC_TIMEOUT_MS', 'RPC_HTTP_CLIENT', 'VALIDATE_LOG_WINDOW', 'DEVNET', 'DEVNET_PORT'] as const

/** What loadConfig answers for the same environment, cut to what validate reads: the answer the hand-written checks must give. */
function schemaAnswer(env: Record<string, string>): { config: unknown } | { error: string } {
  let config: Config
  try {
    // RPC_MAX_ANSWER_BYTES's floor is RPC_BATCH_BYTES, a rule for the indexer's batches (validate sends none): kept out of the comparison
    config = loadConfig({ ...env, RPC_BATCH_BYTES: '1' })
  } catch (error) {
    return { error: (error as Error).message }
  }
  const { DATABASE_URL, RPC_MAX_ANSWER_BYTES, RPC_TIMEOUT_MS, RPC_HTTP_CLIENT, VALIDATE_LOG_WINDOW, DEVNET, DEVNET_PORT } = config
  const chains = config.chains.map(({ chainId, rpcUrl, rpcUrls, entryPoints, explorerUrl }) => ({ chainId, rpcUrl, rpcUrls, entryPoints, explorerUrl }))
  return { config: { DATABASE_URL, RPC_MAX_ANSWER_BYTES, RPC_TIMEOUT_MS, RPC_HTTP_CLIENT, VALIDATE_LOG_WINDOW, DEVNET, DEVNET_PORT, chains } }
}

async function handAnswer(env: Record<string, string>): Promise<{ config: unknown } | { error: string }> {
  try {
    return { config: await loadValidateCommandConfig(env) }
  } catch (error) {
    return { error: (error as Error).message }
  }
}

const numbers = fc.oneof(
  fc.constantFrom('', '1', '0', '-0', '-1', '1.5', '1.0', ' 5 ', '  ', '0x10', '0b11', '1e3', '1e20', '+3', '.5e1', 'Infinity', 'NaN', 'abc', '1_000'),
  fc.constantFrom('65535', '65536', '10485760', '268435456', '9007199254740991', '9007199254740992', '-9007199254740993'),
  fc.integer({ min: -10, max: 100_000 }).map(String),
  fc.string(),
)
const urls = fc.oneof(
  fc.constantFrom('http://127.0.0.1:8545', 'https://node.example/key', 'ws://127.0.0.1:8546', 'http://a:1, https://b:2', 'http://a:1,http://a:1', 'http://a:1,,', 'ftp://x', 'not a url', ','),
  fc.string(),
)
const values: Record<(typeof READ)[number], fc.Arbitrary<string>> = {
  DATABASE_URL: fc.oneof(fc.constantFrom('postgres://u@h:5432/d', 'postgresql://h/d', 'mysql://h/d', 'postgres:x', 'nope', ''), fc.string()),
  RPC_URL: urls,
  CHAIN_ID: numbers,
  RPC_MAX_ANSWER_BYTES: numbers,
  RPC_TIMEOUT_MS: numbers,
  RPC_HTTP_CLIENT: fc.oneof(fc.constantFrom('socket', 'undici', 'Socket', 'fetch', ''), fc.string()),
  VALIDATE_LOG_WINDOW: numbers,
  DEVNET: fc.oneof(fc.constantFrom('true', 'false', '1', '0', 'yes', 'no', 'TRUE', 'on', ''), fc.string()),
  DEVNET_PORT: numbers,
}
const environments = fc.record(values, { requiredKeys: [] }) as fc.Arbitrary<Record<string, string>>

describe('loadValidateCommandConfig', () => {
  it('answers as loadConfig for the variables validate reads: the same values, or the same message naming each bad one', async () => {
    await fc.assert(
      fc.asyncProperty(environments, async (env) => {
        expect(await handAnswer(env)).toEqual(schemaAnswer(env))
      }),
      { numRuns: 2_000 },
    )
  })

  it('has loadConfig defaults with nothing set', async () => {
    expect(await handAnswer({})).toEqual(schemaAnswer({}))
  })

  it('reads CHAINS through loadConfig', async () => {
    const env = { CHAINS: '[{"chainId":8453,"rpcUrl":"http://127.0.0.1:8545","explorerUrl":"https://basescan.org"}]', PORT: '3001' }
    expect(await loadValidateCommandConfig(env)).toEqual(loadConfig(env))
    await expect(loadValidateCommandConfig({ CHAINS: '[]' })).rejects.toThrow('Invalid configuration: CHAINS: must list at least one chain')
  })

  it('does not check settings validate does not read', async () => {
    await expect(loadValidateCommandConfig({ PORT: 'eighty', LOG_LEVEL: 'loud' })).resolves.toMatchObject({ DEVNET: true, chains: [] })
  })
})
