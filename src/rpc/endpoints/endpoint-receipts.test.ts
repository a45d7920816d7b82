import { describe, expect, it } from 'vitest'
import { createReceiptKnowledge, saysMethodMissing } from './endpoint-receipts.js'

describe('receipts by density', () => {
  it('keeps single receipts for a sparse block and takes a dense block whole', () => {
    const known = createReceiptKnowledge()
    known.singleReceipts(50 * 1_500, 50)
    known.blockReceipts(2 * 200 * 1_400, 2, 400)
    expect(known.wholeBlockCheaper(4, 200)).toBe(false)
    expect(known.wholeBlockCheaper(100, 200)).toBe(true)
  })

  it('decides by the measured sizes, not a fixed share: small single receipts against bulky block receipts move the line', () => {
    const lean = createReceiptKnowledge()
    lean.singleReceipts(1_000 * 600, 1_000)
    lean.blockReceipts(200 * 3_000, 1, 200)
    // 100 of 200: 100 × 3 × 600 = 180 KB singly, 600 KB whole
    expect(lean.wholeBlockCheaper(100, 200)).toBe(false)
    const bulky = createReceiptKnowledge()
    bulky.singleReceipts(1_000 * 6_000, 1_000)
    bulky.blockReceipts(200 * 1_000, 1, 200)
    // 20 of 200: 20 × 3 × 6 KB = 360 KB singly, 206 KB whole
    expect(bulky.wholeBlockCheaper(20, 200)).toBe(true)
  })

  it('never asks a node without eth_getBlockReceipts for them', () => {
    const known = createReceiptKnowledge()
    known.support = 'unsupported'
    expect(known.wholeBlockCheaper(200, 200)).toBe(false)
  })

  it('recognises the ways nodes say the method is missing, and nothing else', () => {
    for (const message of [
      'the method eth_getBlockReceipts does not exist/is not available (-32601)',
      'Method not found',
      '{"code":-32600,"message":"invalid request"}',
      'Unsupported method: eth_getBlockReceipts',
    ]) {
      expect(saysMethodMissing(message), message).toBe(true)
    }
    for (const message of ['receipt of 0x12 is not available from the node', 'HTTP 503: upstream unavailable', 'request timed out']) {
      expect(saysMethodMissing(message), message).toBe(false)
    }
  })
})
