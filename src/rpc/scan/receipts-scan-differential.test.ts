import { describe, expect, it } from 'vitest'
import { receiptJson, type ReceiptFields } from '../../../bench/chain/receipts.js'
import { createRandom, type Random } from '../../../devnet/random.js'
import { ScanFailed } from './bytes.js'
import type { LogFilter, RawReceipt } from '../objects.js'
import { slimReceipt } from './receipt-read.js'
import { scanBlockReceiptsBatch, type BlockReceiptsExpected } from './receipts-scan.js'

/** The receipts scanner against JSON.parse on generated answers: the same receipts, or ScanFailed (never another error). */

const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as const
const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}`

const scan = (text: string, ids: number[], expected: BlockReceiptsExpected[]) => scanBlockReceiptsBatch(Buffer.from(text), ids, expected)
const entries = (maps: Array<Map<string, RawReceipt>>) => maps.map((map) => [...map.entries()])
/** A receipt as the scanner keeps it: its fields, and no logs unless a filter names them. */
const slim = (receipt: Record<string, unknown>, filter?: LogFilter) => slimReceipt(receipt as unknown as RawReceipt, filter)

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
