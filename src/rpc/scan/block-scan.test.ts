import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MARKER_HEX } from '../../attribution/marker.js'
import { readValues } from '../../../test/support/differential.js'
import { matchesFilter, scanBlockBatch, ScanFailed } from './block-scan.js'

const entryPoint = '0x0000000071727de22e5e9d8baf0edac6f37da032'
const entryPoints = new Set([entryPoint, '0x0000000071727De22E5E9d8BAf0edAc6f37da032'])
/** The indexer's filter: the ERC-8021 marker, or a call to an EntryPoint. */
const filter = { inputSuffix: MARKER_HEX, toAddresses: entryPoints }
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}`

type Tx = Record<string, unknown>

function tx(n: number, input: string, to: string | null = address(n + 1), extra: Tx = {}): Tx {
  return {
    blockHash: hash(9),
    blockNumber: '0x1',
    from: address(n),
    gas: '0x5208',
    hash: hash(1000 + n),
    input,
    nonce: '0x1',
    to,
    transactionIndex: `0x${n.toString(16)}`,
    value: '0x0',
    type: '0x2',
    accessList: [{ address: address(7), storageKeys: [hash(1), hash(2)] }],
    v: '0x1',
    r: hash(3),
    s: hash(4),
    ...extra,
  }
}

function block(number: number, transactions: Tx[], extra: Record<string, unknown> = {}) {
  return {
    baseFeePerGas: '0x7',
    hash: hash(number + 500),
    number: `0x${number.toString(16)}`,
    parentHash: hash(number + 499),
    timestamp: '0x6774858a',
    transactions,
    uncles: [],
    withdrawals: [{ index: '0x0', validatorIndex: '0x1', address: address(3), amount: '0x10' }],
    ...extra,
  }
}

const batch = (blocks: unknown[]) => JSON.stringify(blocks.map((result, id) => ({ jsonrpc: '2.0', id, result })))

/** What the scanner must produce, computed the slow way from a full parse. */
function expected(blocks: ReturnType<typeof block>[]) {
  return blocks.map((b) => ({
    number: Number.parseInt(b.number, 16),
    hash: b.hash,
    parentHash: b.parentHash,
    timestamp: Number.parseInt(b.timestamp, 16),
    txCount: b.transactions.length,
    candidates: b.transactions.filter((t) => (t.input as string).endsWith(MARKER_HEX) || entryPoints.has(t.to as string)).map(readValues),
  }))
}

describe('scanBlockBatch', () => {
  it('finds the transactions ending with the marker or calling an EntryPoint, and reads each header', () => {
    const blocks = [
      block(5, [tx(0, '0xa9059cbb'), tx(1, `0xdeadbeef${MARKER_HEX}`), tx(2, '0x', entryPoint), tx(3, '0x', null)]),
      block(6, []),
      block(7, [tx(4, `0x${MARKER_HEX}00`), tx(5, '0x', '0x0000000071727De22E5E9d8BAf0edAc6f37da032', { authorizationList: [{ chainId: '0x1', address: address(9), nonce: '0x0', yParity: '0x1', r: hash(5), s: hash(6) }] })]),
    ]
    const scanned = scanBlockBatch(Buffer.from(batch(blocks)), [5, 6, 7], filter)
    expect(scanned).toEqual(expected(blocks))
    expect(scanned.map((b) => b.candidates.map((t) => t.hash))).toEqual([[hash(1001), hash(1002)], [], [hash(1005)]])
  })

  it('keeps what the filter it is given asks for, nothing built in', () => {
    const blocks = [block(5, [tx(0, '0xa9059cbbcafe'), tx(1, `0xdeadbeef${MARKER_HEX}`), tx(2, '0x', entryPoint), tx(3, '0xcafe', address(77))])]
    const scanned = scanBlockBatch(Buffer.from(batch(blocks)), [5], { inputSuffix: 'cafe', toAddresses: new Set([address(77)]) })
    expect(scanned[0]!.candidates.map((t) => t.hash)).toEqual([hash(1000), hash(1003)])
    expect(scanBlockBatch(Buffer.from(batch(blocks)), [5], { inputSuffix: 'cafe', toAddresses: new Set() })[0]!.candidates.map((t) => t.hash)).toEqual([hash(1000), hash(1003)])
    expect(scanBlockBatch(Buffer.from(batch(blocks)), [5], { inputSuffix: 'beef', toAddresses: new Set([entryPoint]) })[0]!.candidates.map((t) => t.hash)).toEqual([hash(1002)])
  })

  it('hands each candidate to detect as it is read, keeping what detect returns', () => {
    const blocks = [block(5, [tx(0, `0x${MARKER_HEX}`), tx(1, `0xdeadbeef${MARKER_HEX}`), tx(2, '0x')]), block(6, [tx(3, `0x${MARKER_HEX}`)])]
    const detected: string[] = []
    const detect = (t: { hash: string; input: string }) => (detected.push(t.hash), t.input.startsWith('0xdeadbeef') ? undefined : { hash: t.hash })
    const scanned = scanBlockBatch(Buffer.from(batch(blocks)), [5, 6], filter, detect)
    expect(scanned.map((b) => b.candidates)).toEqual([[{ hash: hash(1000) }], [{ hash: hash(1003) }]])
    expect(detected).toEqual([hash(1000), hash(1001), hash(1003)])
    // read as they come: when the scan refuses the second block, the first block's candidates were detected already
    detected.length = 0
    const hashesOnly = [blocks[0]!, block(6, [hash(7)] as never)]
    expect(() => scanBlockBatch(Buffer.from(batch(hashesOnly)), [5, 6], filter, detect)).toThrow(/other than objects/)
    expect(detected).toEqual([hash(1000), hash(1001)])
  })

  it('returns the blocks in the order asked, whatever the order of the answers', () => {
    const blocks = [block(9, [tx(0, '0x')]), block(8, [tx(1, `0x${MARKER_HEX}`)])]
    expect(scanBlockBatch(Buffer.from(batch(blocks)), [8, 9], filter).map((b) => b.number)).toEqual([8, 9])
  })

  const refusals: Array<[string, string, number[]]> = [
    ['an error item', JSON.stringify([{ jsonrpc: '2.0', id: 0, error: { code: -32000, message: 'busy' } }]), [1]],
    ['a null result', JSON.stringify([{ jsonrpc: '2.0', id: 0, result: null }]), [1]],
    ['a block other than the one asked', batch([block(2, [])]), [1]],
    ['hashes instead of transaction bodies', batch([{ ...block(1, []), transactions: [hash(1)] }]), [1]],
    ['pretty-printed JSON', JSON.stringify([{ jsonrpc: '2.0', id: 0, result: block(1, [tx(0, '0x')]) }], null, 2), [1]],
    ['a body cut in half', batch([block(1, [tx(0, '0x'), tx(1, '0x')])]).slice(0, 300), [1]],
    // offsets would be bytes for the scanner and characters for JSON.parse
    ['a byte outside ASCII', batch([block(1, [tx(0, '0x', address(2), { note: 'café' }), tx(1, `0x${MARKER_HEX}`)])]), [1]],
  ]
  for (const [name, text, numbers] of refusals) {
    it(`gives up on ${name}`, () => {
      expect(() => scanBlockBatch(Buffer.from(text), numbers, filter)).toThrow(ScanFailed)
    })
  }

  describe('findings of the differential fuzz against JSON.parse (issue 11)', () => {
    /** What the caller ends up with: the scan, or on ScanFailed the full parse with the same filter (its candidates' read values). */
    function read(text: string, numbers: number[]) {
      try {
        return scanBlockBatch(Buffer.from(text), numbers, filter)
      } catch (error) {
        expect(error).toBeInstanceOf(ScanFailed)
        const results = (JSON.parse(text) as Array<{ result: ReturnType<typeof block> }>).map((item) => item.result)
        return results.map((b) => ({
          number: Number.parseInt(b.number, 16),
          hash: b.hash,
          parentHash: b.parentHash,
          timestamp: Number.parseInt(b.timestamp, 16),
          txCount: b.transactions.length,
          candidates: b.transactions.filter((t) => matchesFilter(t, filter)).map(readValues),
        }))
      }
    }

    it('an escaped quote inside a transaction string gives up (ScanFailed, never SyntaxError) and the count stays 2', () => {
      const blocks = [block(1, [tx(0, `0x${MARKER_HEX}`, address(2), { note: 'say \"hi\" {[' }), tx(1, '0x')])]
      const text = batch(blocks)
      expect(text).toContain('\\"')
      expect(() => scanBlockBatch(Buffer.from(text), [1], filter)).toThrow(ScanFailed)
      expect(read(text, [1])).toEqual(expected(blocks))
      expect(read(text, [1])[0]!.txCount).toBe(2)
    })

    it('a unicode-escaped key (\\u0069nput) gives up rather than missing the suffix', () => {
      const text = batch([block(1, [tx(0, '0x'), tx(1, '0x')])]).replace('"input":"0x"', `"\\u0069nput":"0x${MARKER_HEX}"`)
      expect(() => scanBlockBatch(Buffer.from(text), [1], filter)).toThrow(ScanFailed)
      expect(read(text, [1])[0]!.candidates.map((t) => t.hash)).toEqual([hash(1000)])
    })

    it('a unicode-escaped value gives up too', () => {
      const text = batch([block(1, [tx(0, '0x')])]).replace('"input":"0x"', `"input":"0x${MARKER_HEX.slice(0, -1)}\\u0031"`)
      expect(() => scanBlockBatch(Buffer.from(text), [1], filter)).toThrow(ScanFailed)
      expect(read(text, [1])[0]!.candidates).toHaveLength(1)
    })

    it('an EntryPoint `to` in mixed case (neither lowercase nor checksummed) is a candidate, scanned or parsed', () => {
      const mixed = '0x0000000071727DE22E5E9D8BAF0EDAC6F37DA032'
      const blocks = [block(1, [tx(0, '0x', mixed), tx(1, '0x')])]
      expect(scanBlockBatch(Buffer.from(batch(blocks)), [1], filter)[0]!.candidates.map((t) => t.hash)).toEqual([hash(1000)])
      expect(matchesFilter({ input: '0x', to: mixed }, filter)).toBe(true)
    })

    it('a candidate that does not parse is ScanFailed, never a SyntaxError out of the range', () => {
      // a number JSON.parse refuses, inside a transaction the scanner parses whole (its `to` is null: not a string)
      const text = batch([block(1, [tx(0, `0x${MARKER_HEX}`, null)])]).replace('"nonce":"0x1"', '"nonce":01')
      expect(() => scanBlockBatch(Buffer.from(text), [1], filter)).toThrow(ScanFailed)
    })

    it("a candidate's values are read without parsing the rest of it, as a non-candidate's are", () => {
      // the scanner reads what it needs of the answer: a value no one reads is not checked, candidate or not
      const text = batch([block(1, [tx(0, `0x${MARKER_HEX}`), tx(1, '0x')])]).replaceAll('"nonce":"0x1"', '"nonce":01')
      expect(scanBlockBatch(Buffer.from(text), [1], filter)[0]!.candidates).toEqual([readValues(tx(0, `0x${MARKER_HEX}`))])
    })

    it('a candidate whose read value is not a string (a contract creation) is parsed whole, as the ordinary parse has it', () => {
      const creation = tx(0, `0x${MARKER_HEX}`, null)
      expect(scanBlockBatch(Buffer.from(batch([block(1, [creation])])), [1], filter)[0]!.candidates).toEqual([creation])
    })

    it('a transaction repeating its input key gives up (JSON.parse keeps the last)', () => {
      const text = batch([block(1, [tx(0, `0x${MARKER_HEX}`)])]).replace('"nonce":"0x1"', '"nonce":"0x1","input":"0x"')
      expect(() => scanBlockBatch(Buffer.from(text), [1], filter)).toThrow(ScanFailed)
      expect(read(text, [1])[0]!.candidates).toEqual([])
    })
  })

  it('agrees with a full parse on random blocks', () => {
    const hex = fc.uint8Array({ maxLength: 40 }).map((bytes) => `0x${Buffer.from(bytes).toString('hex')}`)
    const input = fc.oneof(hex, hex.map((h) => `${h}${MARKER_HEX}`), fc.constant('0x'))
    const to = fc.oneof(fc.constant(null), fc.constant(entryPoint), fc.integer({ min: 1, max: 50 }).map(address))
    const transaction = fc.tuple(fc.nat(1000), input, to, fc.boolean()).map(([n, i, t, list]) => tx(n, i, t, list ? {} : { accessList: [] }))
    const blocks = fc.array(fc.array(transaction, { maxLength: 8 }), { minLength: 1, maxLength: 4 }).map((lists) => lists.map((txs, i) => block(100 + i, txs)))
    fc.assert(
      fc.property(blocks, (generated) => {
        const numbers = generated.map((b) => Number.parseInt(b.number, 16))
        expect(scanBlockBatch(Buffer.from(batch(generated)), numbers, filter)).toEqual(expected(generated))
      }),
      { numRuns: 500 },
    )
  })
})
