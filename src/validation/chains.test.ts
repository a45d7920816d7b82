import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { USER_OPERATION_EVENT_TOPIC } from '../attribution/userops.js'
import { cappedFetch } from './chains.js'

const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}`
const ENTRY_POINT = address(0xe4)
const log = (from: string, topics: string[]) => ({ address: from, topics, data: '0x', blockHash: hash(5), transactionHash: hash(1), logIndex: '0x0', removed: false })

/** A receipt of 100,000 logs, one of them the EntryPoint's UserOperationEvent: about 30 MB of JSON. */
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
  const answer = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 3, result: heavy }))
  server = createServer((_, response) => response.end(answer))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const post = (method: string) => ({ method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 3, method, params: [hash(1)] }) })
const receiptLogs = { addresses: new Set([ENTRY_POINT]), topics: [new Set([USER_OPERATION_EVENT_TOPIC])] }

describe('cappedFetch', () => {
  it('hands a receipt on with its fields and only the EntryPoint events asked for, not its 100,000 logs', async () => {
    const text = await (await cappedFetch(64 * 2 ** 20, { receiptLogs })(url, post('eth_getTransactionReceipt'))).text()
    expect(text.length).toBeLessThan(1_000)
    expect(JSON.parse(text)).toEqual({
      jsonrpc: '2.0',
      id: 3,
      result: { transactionHash: hash(1), status: '0x1', blockHash: hash(5), blockNumber: '0x7', logs: [{ address: ENTRY_POINT, topics: [USER_OPERATION_EVENT_TOPIC, hash(2)], data: '0x' }] },
    })
  })

  it('hands any other answer on as it came', async () => {
    const text = await (await cappedFetch(64 * 2 ** 20, { receiptLogs })(url, post('eth_getTransactionByHash'))).text()
    expect(JSON.parse(text).result.logs).toHaveLength(100_000)
  })
})
