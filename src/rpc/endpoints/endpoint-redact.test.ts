import { describe, expect, it } from 'vitest'
import { redactRpcUrl } from './endpoint-redact.js'

describe('redactRpcUrl', () => {
  it.each([
    ['https://base-mainnet.g.alchemy.com/v2/oKxs8xQ3bZ1yN7kP0aLmT4', 'https://base-mainnet.g.alchemy.com/v2/***'],
    ['https://mainnet.infura.io/v3/0f4e9a1b2c3d4e5f6a7b8c9d0e1f2a3b', 'https://mainnet.infura.io/v3/***'],
    ['https://rpc.ankr.com/eth/6c2f0b8a9d7e4f31a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8', 'https://rpc.ankr.com/eth/***'],
    ['https://frosty-wild.base-mainnet.quiknode.pro/9a8b7c6d5e4f3a2b/', 'https://frosty-wild.base-mainnet.quiknode.pro/***/'],
    ['https://rpc.example.org/?apikey=SECRET123&network=base', 'https://rpc.example.org?apikey=***&network=***'],
    ['https://user:hunter2@node.example.org:8545/rpc', 'https://***@node.example.org:8545/rpc'],
    ['https://node.example.org/rpc#token=abc', 'https://node.example.org/rpc#***'],
    ['http://127.0.0.1:8545', 'http://127.0.0.1:8545'],
    ['wss://base-mainnet.example.org/ws/base-mainnet', 'wss://base-mainnet.example.org/ws/base-mainnet'],
  ])('%s → %s', (url, shown) => {
    expect(redactRpcUrl(url)).toBe(shown)
  })

  it('never shows text that is not a URL (it could be a key pasted alone)', () => {
    expect(redactRpcUrl('oKxs8xQ3bZ1yN7kP0aLmT4')).toBe('[not a URL]')
  })

  it('leaves no part of the key anywhere in the result', () => {
    const key = 'Zq81LmNo0pQrStUv'
    for (const url of [`https://a.example/v2/${key}`, `https://a.example/?k=${key}`, `https://${key}:x@a.example`, `https://x:${key}@a.example/`]) {
      expect(redactRpcUrl(url)).not.toContain(key)
    }
  })
})
