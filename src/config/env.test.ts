import { describe, expect, it } from 'vitest'
import { defaultEntryPoints, rpcUrlsOf } from './chains.js'
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

  it('names HEAP_GROWTH_PERCENT when it is out of range, and defaults it to 50', () => {
    expect(loadConfig({}).HEAP_GROWTH_PERCENT).toBe(50)
    expect(loadConfig({ HEAP_GROWTH_PERCENT: '0' }).HEAP_GROWTH_PERCENT).toBe(0)
    expect(() => loadConfig({ HEAP_GROWTH_PERCENT: '-5' })).toThrow(/HEAP_GROWTH_PERCENT: must be >= 0/)
    expect(() => loadConfig({ HEAP_GROWTH_PERCENT: '1000' })).toThrow(/HEAP_GROWTH_PERCENT: must be <= 400/)
  })

  it('names RPC_MAX_ANSWER_BYTES when it is below RPC_BATCH_BYTES, and defaults it to 256 MiB', () => {
    expect(loadConfig({}).RPC_MAX_ANSWER_BYTES).toBe(256 * 2 ** 20)
    expect(() => loadConfig({ RPC_MAX_ANSWER_BYTES: '1048576' })).toThrow(/RPC_MAX_ANSWER_BYTES: must be at least RPC_BATCH_BYTES \(10485760\)/)
    expect(loadConfig({ RPC_MAX_ANSWER_BYTES: '1048576', RPC_BATCH_BYTES: '1048576' }).RPC_MAX_ANSWER_BYTES).toBe(2 ** 20)
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

  it('takes several endpoints for the chain from RPC_URL, comma-separated (spaces and repeats ignored)', () => {
    const config = loadConfig({ RPC_URL: 'https://a.example/v2/KEY1, https://b.example/rpc,https://a.example/v2/KEY1' })
    expect(config.chains[0]).toMatchObject({ rpcUrl: 'https://a.example/v2/KEY1', rpcUrls: ['https://a.example/v2/KEY1', 'https://b.example/rpc'] })
    expect(rpcUrlsOf(config.chains[0]!)).toEqual(['https://a.example/v2/KEY1', 'https://b.example/rpc'])
  })

  it('keeps one RPC_URL a single endpoint', () => {
    const [chain] = loadConfig({ RPC_URL: 'http://127.0.0.1:8545' }).chains
    expect(chain!.rpcUrls).toBeUndefined()
    expect(rpcUrlsOf(chain!)).toEqual(['http://127.0.0.1:8545'])
  })

  it('names RPC_URL when an entry of its list is not a URL', () => {
    expect(() => loadConfig({ RPC_URL: 'https://a.example,not-a-url' })).toThrow(/RPC_URL: must be an http\(s\) or ws\(s\) URL, or several separated by commas/)
    expect(() => loadConfig({ RPC_URL: ',' })).toThrow(/RPC_URL: /)
  })

  it('takes CHAINS[].rpcUrls as an array, rpcUrl still accepted (and joined first)', () => {
    const config = loadConfig({
      CHAINS: JSON.stringify([
        { chainId: 1, rpcUrls: ['http://a:8545', 'http://b:8545'] },
        { chainId: 2, rpcUrl: 'http://c:8545' },
        { chainId: 3, rpcUrl: 'http://d:8545', rpcUrls: ['http://e:8545'] },
      ]),
    })
    expect(config.chains.map(rpcUrlsOf)).toEqual([['http://a:8545', 'http://b:8545'], ['http://c:8545'], ['http://d:8545', 'http://e:8545']])
    expect(config.chains[0]!.rpcUrl).toBe('http://a:8545')
  })

  it('names the bad entry of CHAINS[].rpcUrls, and an empty list', () => {
    expect(() => loadConfig({ CHAINS: '[{"chainId":1,"rpcUrls":["http://a","ftp://b"]}]' })).toThrow(/CHAINS\[0\]\.rpcUrls\[1\]: must be an http\(s\) or ws\(s\) URL/)
    expect(() => loadConfig({ CHAINS: '[{"chainId":1,"rpcUrls":[]}]' })).toThrow(/CHAINS\[0\]\.rpcUrls: must list at least one URL/)
  })
})
