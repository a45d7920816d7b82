import { describe, expect, it } from 'vitest'
import { receiptJson, type ReceiptFields } from '../../../bench/chain/receipts.js'
import { createRandom, type Random } from '../../../devnet/random.js'
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
function reference(text: string, ids: readonly number[], expected: readonly BlockReceiptsExpected[]): Array<Array<[string, unknown]>> | 'bad' {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return 'bad'
  }
  if (!Array.isArray(parsed) && ids.length > 1) return 'bad'
  const items = (Array.isArray(parsed) ? parsed : [parsed]) as Array<{ id?: unknown; result?: unknown; error?: unknown } | null>
  const out: Array<Array<[string, unknown]>> = []
  for (const [slot, id] of ids.entries()) {
    const answer = ids.length === 1 && items.length === 1 ? items[0] : items.find((candidate) => Number(candidate?.id) === id)
    if (!answer || answer.error) return 'bad'
    const { result } = answer
    if (!Array.isArray(result) || result.length !== expected[slot]!.txCount) return 'bad'
    const kept: Array<[string, unknown]> = []
    for (const r of result as Array<Record<string, unknown> | null>) {
      if (typeof r?.blockHash !== 'string' || r.blockHash.toLowerCase() !== expected[slot]!.blockHash.toLowerCase()) return 'bad'
      if (typeof r.transactionHash !== 'string') return 'bad'
      const key = r.transactionHash.toLowerCase()
      if (expected[slot]!.hashes.has(key)) kept.push([key, slim(r, expected[slot]!.logs?.get(key))])
    }
    out.push(kept)
  }
  return out
}

/** A string a hostile or odd node could put in a receipt. */
const oddString = (random: Random) => random.pick(['say "hi"', 'back\\slash', '{[', ']}', '"blockHash":"', 'tab\there', 'é日', '', 'a,b:c', '\\"', '"result":[', '}]},{"id":1'])

function randomReceipt(random: Random, n: number, blockHash: string): string {
  const fields: ReceiptFields = {
    blockHash,
    blockNumber: 1,
    transactionHash: hash(1000 + n),
    transactionIndex: n,
    from: address(random.int(1000)),
    to: random.chance(0.1) ? null : address(random.int(1000)),
    type: 2,
    cumulativeGasUsed: 21_000 * (n + 1),
    gasUsed: 21_000,
    effectiveGasPrice: 7,
    status: random.chance(0.1) ? 0 : 1,
    logs: Array.from({ length: random.int(3) }, () => ({ address: address(random.int(9)), topics: [hash(random.int(99))], data: `0x${random.hex(random.int(64))}` as const })),
    firstLogIndex: 0,
  }
  let json = receiptJson(fields).json
  // most receipts are ordinary, so that most answers are too (the scanner must read those)
  if (random.chance(0.75)) return json
  // the oddities a node may send: other key order, odd strings, other types, keys missing or twice
  const roll = random.next()
  if (roll < 0.15) json = JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(json) as object).reverse()))
  else if (roll < 0.25) json = json.replace('"type"', `"note":${JSON.stringify(oddString(random))},"type"`)
  else if (roll < 0.28) json = json.replace(/"blockHash":"0x[0-9a-f]+",/, '')
  else if (roll < 0.31) json = json.replace(/"blockHash":"0x[0-9a-f]{64}"/, `"blockHash":"${hash(random.int(3))}"`)
  else if (roll < 0.33) json = json.replace('"type"', `"transactionHash":"${hash(1000 + random.int(5))}","type"`)
  else if (roll < 0.35) json = json.replace(/"transactionHash":"0x[0-9a-f]{64}"/, '"transactionHash":null')
  else if (roll < 0.37) json = json.replace('"blockHash"', '"\\u0062lockHash"')
  else if (roll < 0.39) json = json.toUpperCase().replace(/"0X/g, '"0x')
  else if (roll < 0.4) json = json.replace('"address":"0x', '"address":"0X')
  else if (roll < 0.405) json = json.replace(/"address":"0x[0-9a-f]+",?/, '')
  else if (roll < 0.41) json = json.replace(/"address":"0x[0-9a-f]+"/, '"address":null')
  else if (roll < 0.415) json = json.replace(/"topics":\[[^\]]*\]/, '"topics":"none"')
  return json
}

/** Logs a caller may want: of one or two addresses, with a first topic among some (or any). */
function randomFilter(random: Random): LogFilter {
  const topics = random.chance(0.5) ? [new Set(Array.from({ length: 50 }, (_, k) => hash(2 * k)))] : []
  return { addresses: new Set([address(random.int(9)), address(random.int(9))]), topics }
}

/** A batch answer of `eth_getBlockReceipts`, as JSON text, and what was asked. */
function randomAnswer(random: Random): { text: string; ids: number[]; expected: BlockReceiptsExpected[] } {
  const count = 1 + random.int(4)
  const ids = Array.from({ length: count }, (_, i) => 10 + i)
  let n = 0
  const expected: BlockReceiptsExpected[] = []
  const items = ids.map((id) => {
    const blockHash = hash(0xb000 + id)
    const txCount = random.int(7)
    const first = n
    const receipts = Array.from({ length: txCount }, () => randomReceipt(random, n++, blockHash))
    // what the block held when fetched: usually what the node answers, sometimes not
    const told = random.chance(0.05) ? txCount + 1 : txCount
    const hashes = new Set(Array.from({ length: txCount }, (_, k) => hash(1000 + first + k)).filter(() => random.chance(0.5)))
    expected.push({ blockHash, txCount: told, hashes, logs: new Map([...hashes].flatMap((wanted) => (random.chance(0.5) ? [[wanted, randomFilter(random)]] : []))) })
    const roll = random.next()
    const result = roll < 0.03 ? 'null' : roll < 0.05 ? '{}' : `[${receipts.join(random.pick([',', ' , ', ',\n']))}]`
    if (random.chance(0.03)) return `{"jsonrpc":"2.0","id":${id},"error":{"code":-32000,"message":"header not found"}}`
    return random.chance(0.2) ? `{"result":${result},"id":${id},"jsonrpc":"2.0"}` : `{"jsonrpc":"2.0","id":${id},"result":${result}}`
  })
  if (random.chance(0.3)) items.reverse()
  if (random.chance(0.02)) items.pop()
  let text = items.length === 1 && random.chance(0.5) ? items[0]! : `[${items.join(random.pick([',', ', ', '\n,\n']))}]`
  if (random.chance(0.02)) text = text.slice(0, random.int(text.length))
  return { text, ids, expected }
}

describe('scanBlockReceiptsBatch against JSON.parse', () => {
  it('on 3,000 generated answers (odd strings, escapes, key orders, reorgs, missing keys, errors, cut answers): the same receipts, or ScanFailed', () => {
    const random = createRandom(8021)
    let scanned = 0
    let gaveUp = 0
    let logsKept = 0
    for (let round = 0; round < 3_000; round++) {
      const { text, ids, expected } = randomAnswer(random)
      const want = reference(text, ids, expected)
      let got: Array<Array<[string, unknown]>>
      try {
        got = entries(scan(text, ids, expected))
      } catch (error) {
        if (!(error instanceof ScanFailed)) throw new Error(`not ScanFailed on ${text}: ${String(error)}`)
        gaveUp++
        continue
      }
      scanned++
      // whatever the scanner reads is what the ordinary reading accepts, receipt for receipt
      expect(want, text).not.toBe('bad')
      expect(got, text).toEqual(want)
      for (const [, kept] of got.flat()) logsKept += (kept as RawReceipt).logs.length
    }
    // the logs filters were exercised, not only the receipts without one
    expect(logsKept).toBeGreaterThan(50)
    // most answers are ordinary: the scanner must read them, not give them all to the parser
    expect(scanned).toBeGreaterThan(gaveUp)
  })

  it('never gives up on answers as the bench chain prints them', () => {
    const random = createRandom(4337)
    for (let round = 0; round < 300; round++) {
      const blockHash = hash(0xb000 + round)
      const txCount = random.int(20)
      const receipts = Array.from({ length: txCount }, (_, n) => {
        const fields: ReceiptFields = {
          blockHash,
          blockNumber: round,
          transactionHash: hash(1000 + n),
          transactionIndex: n,
          from: address(n),
          to: address(n + 1),
          type: 2,
          cumulativeGasUsed: 21_000 * (n + 1),
          gasUsed: 21_000,
          effectiveGasPrice: 7,
          status: 1,
          logs: random.chance(0.5) ? [{ address: address(3), topics: [hash(4), hash(5)], data: `0x${random.hex(96)}` }] : [],
          firstLogIndex: n,
        }
        return receiptJson(fields).json
      })
      const expected = { blockHash, txCount, hashes: new Set(Array.from({ length: txCount }, (_, n) => hash(1000 + n)).filter(() => random.chance(0.5))) }
      const text = `[{"jsonrpc":"2.0","id":0,"result":[${receipts.join(',')}]}]`
      expect(entries(scan(text, [0], [expected]))).toEqual(reference(text, [0], [expected]))
    }
  })
})
