import { createServer, type Server } from 'node:http'
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import type { Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAnvil, type Anvil } from '../../devnet/anvil.js'
import { USER_OPERATION_EVENT_TOPIC } from '../attribution/userops.js'
import { createValidationChains } from './chains.js'
import { HashNotFoundError } from './errors.js'
import { findOnChain } from './rpc-lookup.js'

/**
 * Validation asks the chain through rpc/, as the indexer does: a hung
 * endpoint fails over to the next and is kept out of the lookups after it;
 * a receipt of a hundred thousand logs is handed on reduced to what a
 * lookup reads.
 */

const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hex
const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as const
const ENTRY_POINT = address(0xe4)

/** A node that takes connections and requests and never answers: what a hung provider looks like. */
async function hungNode(): Promise<{ url: string; requests: () => number; close: () => Promise<unknown> }> {
  let requests = 0
  const sockets = new Set<Socket>()
  const server: NetServer = createNetServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('data', (data) => (requests += data.toString('latin1').split('POST ').length - 1))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v2/oKxs8xQ3bZ1yN7kP0aLmT4`,
    requests: () => requests,
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise((resolve) => server.close(resolve))
    },
  }
}

describe('a chain whose first endpoint hangs', () => {
  let anvil: Anvil
  let hung: Awaited<ReturnType<typeof hungNode>>
  beforeAll(async () => {
    ;[anvil, hung] = await Promise.all([startAnvil({ port: 0 }), hungNode()])
  })
  afterAll(async () => {
    await Promise.all([anvil?.stop(), hung?.close()])
  })

  it('is answered by the next endpoint within the timeout, and the hung one is left out of the next lookups', async () => {
    const chains = createValidationChains([{ chainId: undefined, rpcUrl: hung.url, rpcUrls: [hung.url, anvil.rpcUrl], entryPoints: [ENTRY_POINT] }], { timeoutMs: 500 })
    // the chain id is read from a node: the hung one is asked first, times out, and anvil answers
    const chain = await chains.select(undefined)
    expect(chain.chainId).toBe(anvil.chainId)
    expect(hung.requests()).toBeGreaterThan(0)
    const [states] = chains.endpointStates()
    expect(states!.map((state) => state.state)).toEqual(['sick', 'healthy'])
    // its URL is shown redacted, with why it is sick
    expect(states![0]).toMatchObject({ url: expect.stringContaining('/v2/***'), lastError: expect.stringContaining('did not answer within 500 ms') })

    // a lookup now goes to anvil alone: the chain's answer (not known), not a timeout
    const askedOfHung = hung.requests()
    await expect(findOnChain(chain, { type: 'transaction', hash: hash(1), logWindow: 100 })).rejects.toBeInstanceOf(HashNotFoundError)
    expect(hung.requests()).toBe(askedOfHung)
  })
})

describe('a receipt of 100,000 logs', () => {
  const log = (from: string, topics: string[]) => ({ address: from, topics, data: '0x', blockHash: hash(5), transactionHash: hash(1), logIndex: '0x0', removed: false })
  const heavy = {
    transactionHash: hash(1),
    blockHash: hash(5),
    blockNumber: '0x7',
    status: '0x1',
    logsBloom: `0x${'00'.repeat(256)}`,
    logs: Array.from({ length: 100_000 }, (_, i) => (i === 77_777 ? log(ENTRY_POINT, [USER_OPERATION_EVENT_TOPIC, hash(2)]) : log(address(7), [hash(i)]))),
  }
  let server: Server
  let url: string
  beforeAll(async () => {
    // about 30 MB of JSON, answered to any request with the request's id
    const result = JSON.stringify(heavy)
    server = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk) => (body += chunk))
      request.on('end', () => response.end(`{"jsonrpc":"2.0","id":${(JSON.parse(body) as { id: number }).id},"result":${result}}`))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it('is handed to the lookup with its fields and only the EntryPoint events', async () => {
    const chains = createValidationChains([{ chainId: 8453, rpcUrl: url, entryPoints: [ENTRY_POINT] }], { timeoutMs: 30_000 })
    const chain = await chains.select(8453)
    expect(await chain.receipt(hash(1))).toEqual({
      transactionHash: hash(1),
      status: '0x1',
      blockHash: hash(5),
      blockNumber: '0x7',
      logs: [{ address: ENTRY_POINT, topics: [USER_OPERATION_EVENT_TOPIC, hash(2)], data: '0x' }],
    })
  })
})
