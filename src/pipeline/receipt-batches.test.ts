import { describe, expect, it } from 'vitest'
import type { Hex } from 'viem'
import type { ReceiptWanted } from '../rpc/batches.js'
import type { RawReceipt } from '../rpc/objects.js'
import { createReceiptBatcher } from './receipt-batches.js'

const hashOf = (label: string) => `0x${Buffer.from(label).toString('hex').padEnd(64, '0')}` as Hex
const wantedOf = (range: string, count: number): ReceiptWanted[] =>
  Array.from({ length: count }, (_, i) => ({ hash: hashOf(`${range}${i}`), block: { number: 1, hash: hashOf(`block${range}`), txCount: count } }))
const receiptOf = (wanted: ReceiptWanted): RawReceipt => ({ transactionHash: wanted.hash, status: '0x1', logs: [] })

/** A node that answers each list after `release()`, failing any list that holds a hash in `failing`. */
function slowNode(failing = new Set<string>()) {
  const asked: number[] = []
  const pending: Array<() => void> = []
  return {
    asked,
    release: () => pending.splice(0).forEach((answer) => answer()),
    fetch: (wanted: readonly ReceiptWanted[]) =>
      new Promise<RawReceipt[]>((resolve, reject) => {
        asked.push(wanted.length)
        pending.push(() => (wanted.some(({ hash }) => failing.has(hash)) ? reject(new Error('the node could not serve one receipt')) : resolve(wanted.map(receiptOf))))
      }),
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('receipts of several ranges in one request', () => {
  it('asks a range alone while the node is free, and those ready meanwhile together, each getting its own in order', async () => {
    const node = slowNode()
    const receipts = createReceiptBatcher({ fetch: node.fetch, inFlight: 1, maxRanges: 4 })
    const first = receipts(wantedOf('a', 3))
    const waiting = ['b', 'c', 'd'].map((range, i) => receipts(wantedOf(range, i + 1)))
    await settle()
    expect(node.asked).toEqual([3])
    node.release()
    await settle()
    // b, c and d waited for a's list and go together: 1 + 2 + 3 receipts in one request
    expect(node.asked).toEqual([3, 6])
    node.release()
    expect((await first).map((receipt) => receipt.transactionHash)).toEqual(wantedOf('a', 3).map(({ hash }) => hash))
    for (const [i, range] of ['b', 'c', 'd'].entries()) {
      expect((await waiting[i]!).map((receipt) => receipt.transactionHash)).toEqual(wantedOf(range, i + 1).map(({ hash }) => hash))
    }
  })

  it('puts at most maxRanges ranges in one request', async () => {
    const node = slowNode()
    const receipts = createReceiptBatcher({ fetch: node.fetch, inFlight: 1, maxRanges: 2 })
    const all = ['a', 'b', 'c', 'd', 'e'].map((range) => receipts(wantedOf(range, 1)))
    for (let turn = 0; turn < 4; turn++) {
      await settle()
      node.release()
    }
    await Promise.all(all)
    expect(node.asked).toEqual([1, 2, 2])
  })

  it('asks a failed shared list again range by range: only the range whose receipt fails fails', async () => {
    const node = slowNode(new Set([hashOf('c0')]))
    const receipts = createReceiptBatcher({ fetch: node.fetch, inFlight: 1, maxRanges: 4 })
    const first = receipts(wantedOf('a', 1))
    const [b, c, d] = ['b', 'c', 'd'].map((range) => receipts(wantedOf(range, 2)))
    for (let turn = 0; turn < 3; turn++) {
      await settle()
      node.release()
    }
    await expect(first).resolves.toHaveLength(1)
    await expect(b).resolves.toHaveLength(2)
    await expect(c).rejects.toThrow('could not serve')
    await expect(d).resolves.toHaveLength(2)
    // a alone, b + c + d together (failed), then b, c and d each alone
    expect(node.asked).toEqual([1, 6, 2, 2, 2])
  })

  it('asks nothing for a range without candidates', async () => {
    const node = slowNode()
    const receipts = createReceiptBatcher({ fetch: node.fetch, inFlight: 1, maxRanges: 4 })
    await expect(receipts([])).resolves.toEqual([])
    expect(node.asked).toEqual([])
  })
})
