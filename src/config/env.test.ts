import { describe, expect, it } from 'vitest'
import { defaultEntryPoints } from './chains.js'
import { ConfigError, loadConfig } from './env.js'

describe('loadConfig', () => {
  it('has working defaults for a machine with local PostgreSQL and Redis', () => {
    const config = loadConfig({})
    expect(config.DATABASE_URL).toMatch(/^postgres:\/\/.*127\.0\.0\.1:5432/)
    expect(config.REDIS_URL).toBe('redis://127.0.0.1:6379')
    expect(config.PORT).toBe(3000)
    expect(config.chains).toEqual([])
  })

  it('names DATABASE_URL when it is not a postgres URL', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://localhost/db' })).toThrow(ConfigError)
    expect(() => loadConfig({ DATABASE_URL: 'not a url' })).toThrow(/DATABASE_URL: must be a URL starting with postgres:/)
  })

  it('names PORT when it is not a port', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT: must be a number/)
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/PORT: must be between 0 and 65535/)
  })

  it('lists every bad variable in one message', () => {
    expect(() => loadConfig({ PORT: '-1', LOG_LEVEL: 'loud' })).toThrow(/PORT: .*; LOG_LEVEL: /)
  })

  it('configures one chain from RPC_URL with default EntryPoints', () => {
    const config = loadConfig({ RPC_URL: 'http://127.0.0.1:8545', CHAIN_ID: '31337', START_BLOCK: '5', CONFIRMATIONS: '2' })
    expect(config.chains).toEqual([
      expect.objectContaining({ chainId: 31337, rpcUrl: 'http://127.0.0.1:8545', startBlock: 5, confirmations: 2, entryPoints: [...defaultEntryPoints] }),
    ])
  })

  it('configures several chains from CHAINS JSON', () => {
    const config = loadConfig({
      CHAINS: JSON.stringify([
        { chainId: 1, rpcUrl: 'http://a:8545' },
        { chainId: 2, rpcUrl: 'http://b:8545', startBlock: 10, confirmations: 0 },
      ]),
    })
    expect(config.chains.map((c) => [c.chainId, c.startBlock, c.confirmations])).toEqual([
      [1, 0, 12],
      [2, 10, 0],
    ])
  })

  it('rejects bad CHAINS entries with their position', () => {
    expect(() => loadConfig({ CHAINS: '[{"chainId":1}]' })).toThrow('Invalid configuration: CHAINS[0].rpcUrl: ')
    expect(() => loadConfig({ CHAINS: '[{"chainId":1,"rpcUrl":"http://a","entryPoints":["0x12"]}]' })).toThrow(/CHAINS\[0\]\.entryPoints\[0\]: /)
    expect(() => loadConfig({ CHAINS: '[{"chainId":1,"rpcUrl":"http://a"},{"chainId":1,"rpcUrl":"http://b"}]' })).toThrow(/appears twice/)
  })
})
