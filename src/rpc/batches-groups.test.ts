import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest'
import type { Hex } from 'viem'
import { createRpc } from './client.js'
import type { ReceiptWanted } from './answer-checks.js'

/**
 * Ranges asking their candidates' receipts at once share requests on a
 * node that caps the requests in flight (ask-groups.ts), and each range
 * still gets exactly its own receipts, checked against its own block.
 */
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hex
type Call = { id: number; method: string; params: [string] }

let server: Server
let url: string
/** Per receipts request, in arrival order, the blocks (ranges) its calls are of. */
let receiptRequests: number[][]
/** Refuse the next request with a 429 (the node's cap on requests in flight). */
let refuseNext: boolean
/** A receipt of this transaction names another block (a reorg between blocks and receipts). */
let movedTransaction: string | undefined

const blockOf = (n: number) => Math.floor(n / 100)

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      if (refuseNext) {
        refuseNext = false
        res.writeHead(429, { 'retry-after': '0' }).end()
        return
      }
      const calls = [JSON.parse(body) as Call | Call[]].flat()
      if (calls[0]!.method === 'eth_getTransactionReceipt') receiptRequests.push([...new Set(calls.map((call) => blockOf(Number.parseInt(call.params[0], 16))))])
      const answerOf = (call: Call) => {
        if (call.method !== 'eth_getTransactionReceipt') return { jsonrpc: '2.0', id: call.id, result: '0x1' }
        const n = Number.parseInt(call.params[0], 16)
        const blockHash = call.params[0] === movedTransaction ? hash(0xdead) : hash(blockOf(n))
        return { jsonrpc: '2.0', id: call.id, result: { transactionHash: call.params[0], blockHash, blockNumber: `0x${blockOf(n).toString(16)}`, status: '0x1', logs: [] } }
      }
      const answer = JSON.stringify(Array.isArray(JSON.parse(body)) ? calls.map(answerOf) : answerOf(calls[0]!))
      // a far node: every answer takes a while, so ranges arriving meanwhile find a request out
      setTimeout(() => res.setHeader('content-type', 'application/json').end(answer), 40)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

beforeEach(() => {
  receiptRequests = []
  refuseNext = false
  movedTransaction = undefined
})

/** The wanted receipts of block `block`'s transactions `from`..`to` (a range's candidates). */
const wantedOf = (block: number, count: number): ReceiptWanted[] =>
  Array.from({ length: count }, (_, i) => ({ hash: hash(block * 100 + i), block: { number: block, hash: hash(block), txCount: 100 } }))

/** An RPC client whose node capped its requests in flight (one 429 met), and that knows a receipt's size. */
async function cappedRpc() {
  const rpc = createRpc({ url, timeoutMs: 5_000, batchSize: 1000, retryDelayMs: 1 })
  refuseNext = true
  await rpc.chainId()
  expect(rpc.transport.requestsCapped).toBe(true)
  await rpc.receipts(wantedOf(1, 2))
  receiptRequests = []
  return rpc
}

it('asks the receipts of ranges arriving while one request is out together, in shared requests', async () => {
  const rpc = await cappedRpc()
  const ranges = [2, 3, 4, 5].map((block) => wantedOf(block, 5 + block))
  const receipts = await Promise.all(ranges.map((wanted) => rpc.receipts(wanted)))
  // the first range alone at once, then the three that came meanwhile, together (however the length search cuts them)
  expect(receiptRequests[0]).toEqual([2])
  expect(receiptRequests.slice(1).flat()).toEqual(expect.arrayContaining([3, 4, 5]))
  expect(receiptRequests.some((blocks) => blocks.length > 1)).toBe(true)
  receipts.forEach((got, r) => expect(got.map((receipt) => receipt.transactionHash)).toEqual(ranges[r]!.map((wanted) => wanted.hash)))
})

it('keeps one range failure its own: the others of its request get their receipts', async () => {
  const rpc = await cappedRpc()
  const ranges = [2, 3, 4].map((block) => wantedOf(block, 3))
  movedTransaction = ranges[2]![1]!.hash
  const results = await Promise.allSettled(ranges.map((wanted) => rpc.receipts(wanted)))
  expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected'])
  expect(String((results[2] as PromiseRejectedResult).reason)).toMatch(/another block|0x0+dead/i)
})

it('asks each range alone on a node that never capped its requests in flight', async () => {
  const rpc = createRpc({ url, timeoutMs: 5_000, batchSize: 1000 })
  await rpc.receipts(wantedOf(1, 2))
  receiptRequests = []
  expect(rpc.transport.requestsCapped).toBe(false)
  await Promise.all([2, 3, 4].map((block) => rpc.receipts(wantedOf(block, 3))))
  expect(receiptRequests.every((blocks) => blocks.length === 1)).toBe(true)
})
