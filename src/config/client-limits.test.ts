import { describe, expect, it } from 'vitest'
import { withValidationRpc } from '../validation/endpoints.js'
import { loadConfig } from './env.js'

const chain = (chainId: number | undefined, rpcUrl: string) => ({ chainId, rpcUrl, entryPoints: [] })

describe('per-client limit settings', () => {
  it('have the documented defaults', () => {
    const config = loadConfig({})
    expect({
      headers: config.HTTP_HEADERS_TIMEOUT_MS,
      request: config.HTTP_REQUEST_TIMEOUT_MS,
      connections: config.HTTP_MAX_CONNECTIONS_PER_IP,
      streams: config.STREAM_MAX_SUBSCRIBERS_PER_IP,
      registrations: [config.REGISTER_RATE_LIMIT_MAX, config.REGISTER_RATE_LIMIT_WINDOW_MS],
      validations: [config.VALIDATE_RATE_LIMIT_MAX, config.VALIDATE_RATE_LIMIT_WINDOW_MS, config.VALIDATE_RPC_MAX, config.VALIDATE_RPC_CONCURRENCY],
      missCache: config.VALIDATE_MISS_CACHE_MS,
      validateRpc: config.VALIDATE_RPC_URL,
    }).toEqual({
      headers: 10_000,
      request: 30_000,
      connections: 256,
      streams: 10,
      registrations: [100, 60_000],
      validations: [30, 60_000, 600, 4],
      missCache: 15_000,
      validateRpc: undefined,
    })
  })

  it('refuse a headers timeout longer than the request timeout, naming it', () => {
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '40000' })).toThrow(/HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS \(30000\)/)
    expect(() => loadConfig({ STREAM_MAX_SUBSCRIBERS_PER_IP: '0' })).toThrow(/STREAM_MAX_SUBSCRIBERS_PER_IP: must be > 0/)
  })

  it('read VALIDATE_RPC_URL as one URL or chainId=url pairs, and refuse anything else', () => {
    expect(loadConfig({ VALIDATE_RPC_URL: 'https://validate.example/key' }).VALIDATE_RPC_URL).toEqual({ only: 'https://validate.example/key' })
    expect(loadConfig({ VALIDATE_RPC_URL: '8453=https://a.example, 10=http://b.example:8545' }).VALIDATE_RPC_URL).toEqual({
      byChain: new Map([[8453, 'https://a.example'], [10, 'http://b.example:8545']]),
    })
    for (const bad of ['ws://node.example', 'base=https://a.example', '8453=https://a.example,8453=https://b.example', '8453=']) {
      expect(() => loadConfig({ VALIDATE_RPC_URL: bad }), bad).toThrow(/VALIDATE_RPC_URL: must be an http\(s\) URL, or chainId=url pairs/)
    }
  })

  it('point validation at its own node, chain by chain', () => {
    const chains = [chain(8453, 'https://indexer.example/8453'), chain(10, 'https://indexer.example/10'), chain(undefined, 'https://unresolved.example')]
    expect(withValidationRpc(chains, undefined)).toEqual(chains)
    expect(withValidationRpc(chains, { byChain: new Map([[8453, 'https://validate.example']]) }).map((entry) => entry.rpcUrl)).toEqual([
      'https://validate.example',
      'https://indexer.example/10',
      'https://unresolved.example',
    ])
    expect(withValidationRpc([chains[0]!], { only: 'https://validate.example' })).toEqual([{ ...chains[0], rpcUrl: 'https://validate.example' }])
    expect(() => withValidationRpc(chains, { only: 'https://validate.example' })).toThrow(/VALIDATE_RPC_URL: one URL was given but 3 chains are configured/)
  })
})
