import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { MARKER_HEX } from '../attribution/marker.js'
import { createRpc } from './client.js'
import type { RawTransaction } from './objects.js'

/**
 * Full blocks come back with their candidates already reduced by the
 * caller's `keep`, whichever way the answer was read (the scanner, or the
 * ordinary parse it falls back to): the parsed transactions, calldata
 * included, are never handed on.
 */
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}`
/** When set, every answer holds an escaped character: the scanner gives up and the answer is parsed. */
let escaped = false
let server: Server
let url: string
type Call = { id: number; params: [string] }

function block(number: number) {
  const tx = (n: number, input: string) => ({ hash: hash(1000 * number + n), from: address(n), to: address(n + 1), input, transactionIndex: `0x${n.toString(16)}`, r: hash(3), s: hash(4) })
  return {
    number: `0x${number.toString(16)}`,
    hash: hash(number),
    parentHash: hash(number - 1),
    timestamp: '0x6774858a',
    // the second and third carry the marker, the first does not
    transactions: [tx(0, '0xa9059cbb'), tx(1, `0xdeadbeef${MARKER_HEX}`), tx(2, `0xcafe${MARKER_HEX}`)],
    ...(escaped && { extraData: '\u00e9' }),
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk) => (body += chunk))
    req.on('end', () => {
      const asked = JSON.parse(body) as Call | Call[]
      const answerOf = (call: Call) => ({ jsonrpc: '2.0', id: call.id, result: block(Number.parseInt(call.params[0], 16)) })
      res.setHeader('content-type', 'application/json')
      // JSON.stringify writes é as is: escape it, as some nodes do
      res.end(JSON.stringify(Array.isArray(asked) ? asked.map(answerOf) : answerOf(asked)).replaceAll('é', '\\u00e9'))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

for (const parsed of [false, true]) {
  it(`hands on what detect and then keep return for each candidate (${parsed ? 'answers parsed' : 'answers scanned'})`, async () => {
    escaped = parsed
    const rpc = createRpc({ url, timeoutMs: 5_000, batchSize: 10 })
    const offered: RawTransaction[] = []
    const kept: Array<[string, number]> = []
    // the reduced form: the transaction's hash and index, for the marked ones
    const detect = (tx: RawTransaction) => {
      offered.push(tx)
      return { hash: tx.hash, index: tx.transactionIndex }
    }
    // then, per block, only the first marked one
    const keep = (detected: { hash: string; index: string | null }, blockNumber: number) => {
      kept.push([detected.hash, blockNumber])
      return detected.index === '0x1' ? { hash: detected.hash } : undefined
    }
    const blocks = await rpc.blocks(7, 9, { inputSuffix: MARKER_HEX, toAddresses: new Set() }, detect, keep)
    expect(blocks.map((b) => [b.number, b.txCount, b.candidates])).toEqual([
      [7, 3, [{ hash: hash(7001) }]],
      [8, 3, [{ hash: hash(8001) }]],
      [9, 3, [{ hash: hash(9001) }]],
    ])
    // detect saw the filter's candidates only, each once, in full; keep each detected one once, with its block
    expect(offered.map((tx) => tx.hash)).toEqual([7001, 7002, 8001, 8002, 9001, 9002].map(hash))
    expect(kept).toEqual([7001, 7002, 8001, 8002, 9001, 9002].map((n) => [hash(n), Math.floor(n / 1000)]))
    expect(offered[0]!.input).toBe(`0xdeadbeef${MARKER_HEX}`)
  })
}
