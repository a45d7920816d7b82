import { describe, expect, it } from 'vitest'
import { createBatchSizer } from './adaptive-batch.js'

const KiB = 1024
const MiB = 1024 * KiB

describe('batch sizer', () => {
  it('sizes a method it has not measured by the searched size', () => {
    const sizer = createBatchSizer({ maxSize: 50, maxBytes: 10 * MiB })
    sizer.setSize(12)
    expect(sizer.sizeFor('eth_getTransactionReceipt')).toBe(12)
  })

  it('fills a lighter method’s batch with as many bytes as the searched batch of the heaviest calls', () => {
    const sizer = createBatchSizer({ maxSize: 200, maxBytes: 10 * MiB })
    sizer.setSize(10)
    sizer.succeeded('eth_getBlockByNumber(full)', 10, 10 * 300 * KiB)
    sizer.succeeded('eth_getTransactionReceipt', 10, 10 * 2 * KiB)
    // ten 300 KiB blocks a batch, so 3 MB of receipts: 1,500 of them, held to the most calls allowed
    expect(sizer.sizeFor('eth_getBlockByNumber(full)')).toBe(10)
    expect(sizer.sizeFor('eth_getTransactionReceipt')).toBe(200)

    sizer.setSize(2)
    // two blocks, 600 KiB: 300 receipts, still held to 200; at one block, 150
    expect(sizer.sizeFor('eth_getTransactionReceipt')).toBe(200)
    sizer.setSize(1)
    expect(sizer.sizeFor('eth_getTransactionReceipt')).toBe(150)
  })

  it('keeps a lighter method under the byte budget, a limit the node named and a cap learned for that method', () => {
    const sizer = createBatchSizer({ maxSize: 1_000, maxBytes: 1 * MiB })
    sizer.setSize(50)
    sizer.succeeded('eth_getBlockByNumber(full)', 1, 512 * KiB)
    sizer.succeeded('eth_getTransactionReceipt', 1, 2 * KiB)
    // 50 blocks of 512 KiB would be 25 MiB: the 1 MiB budget holds receipts to 512 and blocks to 2
    expect(sizer.sizeFor('eth_getTransactionReceipt')).toBe(512)
    expect(sizer.sizeFor('eth_getBlockByNumber(full)')).toBe(2)

    sizer.batchRefused(400, 100)
    expect(sizer.sizeFor('eth_getTransactionReceipt')).toBe(100)

    // one break is no proof; a second one at that length is (batch-caps.ts)
    sizer.broke('eth_getTransactionReceipt', 100)
    sizer.broke('eth_getTransactionReceipt', 100)
    expect(sizer.sizeFor('eth_getTransactionReceipt')).toBeLessThan(100)
    expect(sizer.sizeFor('eth_getBlockByNumber(full)')).toBe(2)
  })

  it('lets a batch carry more bytes when the node caps the requests in flight, never past a byte limit the node named', () => {
    const sizer = createBatchSizer({ maxSize: 1_000, maxBytes: 10 * MiB })
    sizer.setSize(1_000)
    sizer.succeeded('eth_getBlockByNumber(full)', 1, 400 * KiB)
    expect(sizer.sizeFor('eth_getBlockByNumber(full)')).toBe(25)
    // 4 requests in flight where 8 were allowed: twice the bytes each, a 50-block range in one request
    sizer.setShare(2)
    expect(sizer.sizeFor('eth_getBlockByNumber(full)')).toBe(51)
    expect(sizer.mostCalls()).toBe(51)
    // the node refuses answers past ~12.5 MiB: its limit holds whatever the share
    sizer.responseTooLarge(51, 12.5 * MiB)
    sizer.setSize(1_000)
    expect(sizer.sizeFor('eth_getBlockByNumber(full)')).toBe(25)
    sizer.setShare(1)
    expect(sizer.sizeFor('eth_getBlockByNumber(full)')).toBe(25)
  })
})
