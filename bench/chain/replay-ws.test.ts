import { createPublicClient, webSocket } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openChain, type Chain } from './files.js'
import { ensureChain } from './generate.js'
import { createReplayServer, type ReplayServer } from './replay-server.js'
import { testChainParams } from './test-chain.js'

let chain: Chain
let server: ReplayServer

beforeAll(async () => {
  chain = openChain(ensureChain(testChainParams))
  server = await createReplayServer(chain, { head: 1 }).listen()
})

afterAll(async () => {
  await server?.close()
  chain?.close()
})

describe('newHeads over the WebSocket', () => {
  it('pushes each block released after the subscription once, in order, to a viem subscription (as the follower subscribes), and answers calls on the socket', async () => {
    const client = createPublicClient({ transport: webSocket(server.url.replace('http', 'ws')) })
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(1n)
    const seen: bigint[] = []
    const last = Math.min(chain.lastBlock, 30)
    const allSeen = new Promise<void>((resolve, reject) => {
      const unwatch = client.watchBlockNumber({
        poll: false as never,
        onBlockNumber(number) {
          seen.push(number)
          if (number >= BigInt(last)) {
            unwatch()
            resolve()
          }
        },
        onError: reject,
      })
      // blocks released before the subscription is in place are not pushed; every one after it is, in order
      server.release({ head: 1, rate: 50 })
    })
    await allSeen
    const first = Number(seen[0])
    expect(seen).toEqual(Array.from({ length: last - first + 1 }, (_, i) => BigInt(first + i)))
    await client.transport.getRpcClient?.().then((rpc: { close(): void }) => rpc.close())
  })
})
