import { describe, expect, it } from 'vitest'
import { ScanFailed } from './bytes.js'
import type { LogFilter, RawReceipt } from '../objects.js'
import { slimReceipt } from './receipt-read.js'
import { scanBlockReceiptsBatch, scanReceiptsBatch, type BlockReceiptsExpected, type ReceiptExpected } from './receipts-scan.js'

const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as const
const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}`
const BLOCK = hash(0xb10c)

function receipt(n: number, blockHash: string = BLOCK, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    blockHash,
    blockNumber: '0x1',
    contractAddress: null,
    cumulativeGasUsed: '0x5208',
    from: address(n),
    gasUsed: '0x5208',
    // a log repeats blockHash and transactionHash one level down: never read as the receipt's own
    logs: [{ address: address(9), topics: [hash(7)], data: '0x', blockHash: hash(666), transactionHash: hash(999), logIndex: '0x0', removed: false }],
    logsBloom: `0x${'00'.repeat(256)}`,
    status: '0x1',
    to: address(n + 1),
    transactionHash: hash(1000 + n),
    transactionIndex: `0x${n.toString(16)}`,
    type: '0x2',
    ...extra,
  }
}

const item = (id: number, result: unknown) => ({ jsonrpc: '2.0', id, result })
const expect1 = (txCount: number, wanted: number[], blockHash: `0x${string}` = BLOCK): BlockReceiptsExpected => ({
  blockHash,
  txCount,
  hashes: new Set(wanted.map((n) => hash(1000 + n))),
})
const scan = (text: string, ids: number[], expected: BlockReceiptsExpected[]) => scanBlockReceiptsBatch(Buffer.from(text), ids, expected)
const entries = (maps: Array<Map<string, RawReceipt>>) => maps.map((map) => [...map.entries()])
/** A receipt as the scanner keeps it: its fields, and no logs unless a filter names them. */
const slim = (receipt: Record<string, unknown>, filter?: LogFilter) => slimReceipt(receipt as unknown as RawReceipt, filter)

describe('scanBlockReceiptsBatch', () => {
  it('reads only the wanted receipts, as JSON.parse reads their fields, one map per call in the order asked', () => {
    const blockA = [0, 1, 2].map((n) => receipt(n))
    const blockB = [3, 4].map((n) => receipt(n, hash(0xb10d)))
    // answers in the other order, as proxies may send them
    const text = JSON.stringify([item(8, blockB), item(7, blockA)])
    const found = scan(text, [7, 8], [expect1(3, [1]), expect1(2, [3, 4], hash(0xb10d))])
    expect(entries(found)).toEqual([[[hash(1001), slim(blockA[1]!)]], [[hash(1003), slim(blockB[0]!)], [hash(1004), slim(blockB[1]!)]]])
  })

  it('reads a single call answered alone, whatever id a proxy gave it', () => {
    const text = JSON.stringify({ jsonrpc: '2.0', id: null, result: [receipt(0)] })
    expect(entries(scan(text, [3], [expect1(1, [0])]))).toEqual([[[hash(1000), slim(receipt(0))]]])
  })

  it('reads the result wherever the id is, before or after it', () => {
    const text = `[{"result":${JSON.stringify([receipt(0), receipt(1)])},"jsonrpc":"2.0","id":0}]`
    expect(entries(scan(text, [0], [expect1(2, [1])]))).toEqual([[[hash(1001), slim(receipt(1))]]])
  })

  it('keeps nothing of a block whose candidates are not in it, and reads an empty block', () => {
    const text = JSON.stringify([item(0, [receipt(0)]), item(1, [])])
    expect(entries(scan(text, [0, 1], [expect1(1, [5]), expect1(0, [])]))).toEqual([[], []])
  })

  it('takes whitespace anywhere JSON allows it, and brackets, braces, commas and colons inside strings', () => {
    const logs = [{ data: '}]},{', address: address(9), topics: [hash(7)] }]
    const odd = receipt(0, BLOCK, { note: '{[:,]}', other: ' } ] ', logs })
    const text = JSON.stringify([item(0, [odd, receipt(1)])], null, '\t').replace(/": /g, '" :\r\n ')
    const filter = { addresses: new Set([address(9)]), topics: [] }
    const found = scan(text, [0], [{ ...expect1(2, [0]), logs: new Map([[hash(1000), filter]]) }])
    expect(entries(found)).toEqual([[[hash(1000), slim(odd, filter)]]])
    expect(found[0]!.get(hash(1000))!.logs).toEqual(logs)
  })

  it('matches the block hash in any letter case', () => {
    const upper = `0x${BLOCK.slice(2).toUpperCase()}`
    const text = JSON.stringify([item(0, [receipt(0, upper)])])
    expect(scan(text, [0], [expect1(1, [0])])[0]!.size).toBe(1)
  })

  const giveUps: Array<[string, string, number[], BlockReceiptsExpected[]]> = [
    ['a receipt of another block (a reorg between the calls)', JSON.stringify([item(0, [receipt(0), receipt(1, hash(5))])]), [0], [expect1(2, [0])]],
    ['a receipt without a block hash', JSON.stringify([item(0, [receipt(0, BLOCK, { blockHash: undefined })])]), [0], [expect1(1, [0])]],
    ['a null block hash', JSON.stringify([item(0, [receipt(0, BLOCK, { blockHash: null })])]), [0], [expect1(1, [0])]],
    ['fewer receipts than the block has transactions', JSON.stringify([item(0, [receipt(0)])]), [0], [expect1(2, [0])]],
    ['more receipts than the block has transactions', JSON.stringify([item(0, [receipt(0), receipt(1)])]), [0], [expect1(1, [0])]],
    ['a null result (a lagging node)', JSON.stringify([item(0, null)]), [0], [expect1(1, [0])]],
    ['a result that is not a list', JSON.stringify([item(0, { 0: receipt(0) })]), [0], [expect1(1, [0])]],
    ['an error item', JSON.stringify([{ jsonrpc: '2.0', id: 0, error: { code: -32000, message: 'boom' } }]), [0], [expect1(1, [0])]],
    ['an answer missing', JSON.stringify([item(0, [receipt(0)])]), [0, 1], [expect1(1, [0]), expect1(0, [])]],
    ['an id not asked', JSON.stringify([item(0, [receipt(0)]), item(5, [])]), [0, 1], [expect1(1, [0]), expect1(0, [])]],
    ['an id answered twice', JSON.stringify([item(0, [receipt(0)]), item(0, [receipt(0)])]), [0, 1], [expect1(1, [0]), expect1(1, [0])]],
    ['a single answer to a batch', JSON.stringify(item(0, [receipt(0)])), [0, 1], [expect1(1, [0]), expect1(0, [])]],
    ['an escaped quote in a string', JSON.stringify([item(0, [receipt(0, BLOCK, { note: 'say "hi"' })])]), [0], [expect1(1, [0])]],
    ['a unicode-escaped key (\\u0062lockHash)', JSON.stringify([item(0, [receipt(0)])]).replace('"blockHash"', '"\\u0062lockHash"'), [0], [expect1(1, [0])]],
    ['a byte outside ASCII', JSON.stringify([item(0, [receipt(0, BLOCK, { note: 'é' })])]), [0], [expect1(1, [0])]],
    ['a receipt repeating its transactionHash key', JSON.stringify([item(0, [receipt(0)])]).replace('"type"', `"transactionHash":"${hash(1001)}","type"`), [0], [expect1(1, [0])]],
    ['a receipt repeating its blockHash key', JSON.stringify([item(0, [receipt(0)])]).replace('"type"', `"blockHash":"${hash(5)}","type"`), [0], [expect1(1, [0])]],
    ['a cut answer', JSON.stringify([item(0, [receipt(0)])]).slice(0, -30), [0], [expect1(1, [0])]],
    ['a wanted receipt whose status is not JSON', JSON.stringify([item(0, [receipt(0)])]).replace('"status":"0x1"', '"status":0x1'), [0], [expect1(1, [0])]],
    ['bytes after the answer', `${JSON.stringify([item(0, [receipt(0)])])}]`, [0], [expect1(1, [0])]],
    ['receipts that are not objects', JSON.stringify([item(0, [hash(1000)])]), [0], [expect1(1, [0])]],
  ]
  for (const [name, text, ids, expected] of giveUps) {
    it(`gives up (ScanFailed, never another error) on ${name}`, () => {
      expect(() => scan(text, ids, expected)).toThrow(ScanFailed)
    })
  }
})

describe('logs of a wanted receipt', () => {
  const BUNDLER = address(0xe4)
  const EVENT = hash(0xee)
  const log = (from: string, topics: string[], data = '0x') => ({ address: from, topics, data, blockHash: BLOCK, transactionHash: hash(1000), logIndex: '0x0', removed: false })

  it('keeps only the logs its filter names (address and topics in any letter case), none without a filter', () => {
    const wantedLog = log(BUNDLER.toUpperCase().replace('0X', '0x'), [EVENT.toUpperCase().replace('0X', '0x'), hash(1), hash(2)], '0x01')
    const logs = [log(address(1), [EVENT]), wantedLog, log(BUNDLER, [hash(0xef)]), log(BUNDLER, [EVENT, hash(1), hash(3)]), log(BUNDLER, [])]
    const text = JSON.stringify([item(0, [receipt(0, BLOCK, { logs }), receipt(1, BLOCK, { logs })])])
    const filter: LogFilter = { addresses: new Set([BUNDLER]), topics: [new Set([EVENT]), undefined, new Set([hash(2)])] }
    const [found] = scan(text, [0], [{ ...expect1(2, [0, 1]), logs: new Map([[hash(1000), filter]]) }])
    expect(found!.get(hash(1000))!.logs).toEqual([{ address: wantedLog.address, topics: wantedLog.topics, data: '0x01' }])
    expect(found!.get(hash(1001))!.logs).toEqual([])
  })

  it('passes over a receipt of 200,000 logs keeping none of them, and the one of them its filter names', () => {
    const many = Array.from({ length: 200_000 }, (_, i) => log(address(7), [hash(i)]))
    many[123_456] = log(BUNDLER, [EVENT])
    const text = JSON.stringify([item(0, [receipt(0, BLOCK, { logs: many })])])
    expect(scan(text, [0], [expect1(1, [0])])[0]!.get(hash(1000))!.logs).toEqual([])
    const filter: LogFilter = { addresses: new Set([BUNDLER]), topics: [new Set([EVENT])] }
    const [found] = scan(text, [0], [{ ...expect1(1, [0]), logs: new Map([[hash(1000), filter]]) }])
    expect(found!.get(hash(1000))).toEqual({ ...slim(receipt(0)), logs: [{ address: BUNDLER, topics: [EVENT], data: '0x' }] })
  })
})

describe('scanReceiptsBatch', () => {
  const asked = (n: number, blockHash: `0x${string}` = BLOCK, logs?: LogFilter): ReceiptExpected => ({ hash: hash(1000 + n), blockHash, logs })
  const scanSingle = (text: string, ids: number[], expected: ReceiptExpected[]) => scanReceiptsBatch(Buffer.from(text), ids, expected)

  it('reads one receipt per call in the order asked, each reduced to its fields and the logs asked for', () => {
    const logs = [{ address: address(9), topics: [hash(7)], data: '0x' }]
    const text = JSON.stringify([item(1, receipt(1, BLOCK, { status: '0x0' })), item(0, receipt(0, BLOCK, { logs }))])
    expect(scanSingle(text, [0, 1], [asked(0, BLOCK, { addresses: new Set([address(9)]), topics: [] }), asked(1)])).toEqual([
      { ...slim(receipt(0)), logs },
      { ...slim(receipt(1)), status: '0x0' },
    ])
  })

  it('accepts a receipt without a block hash (older nodes) and one whose block hash differs only in letter case', () => {
    const text = JSON.stringify([item(0, receipt(0, BLOCK, { blockHash: undefined })), item(1, receipt(1, BLOCK.toUpperCase().replace('0X', '0x')))])
    expect(scanSingle(text, [0, 1], [asked(0), asked(1)]).map((one) => one.transactionHash)).toEqual([hash(1000), hash(1001)])
  })

  const giveUps: Array<[string, string]> = [
    ['a null result (not found on this node)', JSON.stringify([item(0, null)])],
    ['the receipt of another transaction', JSON.stringify([item(0, receipt(1))])],
    ['a receipt of another block (a reorg between the calls)', JSON.stringify([item(0, receipt(0, hash(5)))])],
    ['an error item', JSON.stringify([{ jsonrpc: '2.0', id: 0, error: { code: -32000, message: 'boom' } }])],
    ['a receipt repeating its status', JSON.stringify([item(0, receipt(0))]).replace('"type"', '"status":"0x0","type"')],
    ['a result that is a list', JSON.stringify([item(0, [receipt(0)])])],
  ]
  for (const [name, text] of giveUps) {
    it(`gives up (ScanFailed) on ${name}`, () => {
      expect(() => scanSingle(text, [0], [asked(0)])).toThrow(ScanFailed)
    })
  }
})

/** What the ordinary reading (JSON.parse, then batches.ts's checks) makes of an answer: the wanted receipts, or 'bad'. */
