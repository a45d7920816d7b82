import { createHash, randomBytes } from 'node:crypto'
import fc from 'fast-check'
import { Cbor } from 'ox'
import { Attribution } from 'ox/erc8021'
import { describe, expect, it } from 'vitest'
import { decodeAttribution, type Attributed } from './decode.js'
import { calldataGas } from './gas.js'
import { hasMarker, hasMarkerBytes, MARKER_HEX } from './marker.js'
import { isValidCode } from './codes.js'
import { ATTRIBUTION_LIMITS, boundedCode, boundedReason } from './limits.js'

const MARKER = `0x${MARKER_HEX}`

function attributed(input: string): Attributed {
  const result = decodeAttribution(input)
  if (result.kind !== 'attributed') throw new Error(`expected attributed, got ${JSON.stringify(result)}`)
  return result
}

describe('vectors from the ox documentation', () => {
  it('schema 0: baseapp', () => {
    const result = attributed('0xdddddddd62617365617070070080218021802180218021802180218021')
    expect(result.schemaId).toBe(0)
    expect(result.codes).toEqual(['baseapp'])
    expect(result.suffix).toBe('0x62617365617070070080218021802180218021802180218021')
    expect(result.suffixBytes).toBe(7 + 1 + 1 + 16)
  })

  it('schema 1: custom registry on chain 8453 with two codes', () => {
    const result = attributed(
      '0xddddddddcccccccccccccccccccccccccccccccccccccccc210502626173656170702C6D6F7270686F0E0180218021802180218021802180218021',
    )
    expect(result.schemaId).toBe(1)
    expect(result.codes).toEqual(['baseapp', 'morpho'])
    expect(result.codeRegistry).toEqual({ chainId: 8453, address: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC' })
    expect(result.suffixBytes).toBe(20 + 2 + 1 + 14 + 1 + 1 + 16)
  })

  it('schema 2: CBOR with app code baseapp', () => {
    const result = attributed('0xdddddddda161616762617365617070000b0280218021802180218021802180218021')
    expect(result.schemaId).toBe(2)
    expect(result.codes).toEqual(['baseapp'])
    expect(result.entries).toEqual([{ code: 'baseapp', role: 'app', valid: true }])
  })

  it('schema 0 two codes matches the documented suffix', () => {
    const suffix = Attribution.toDataSuffix({ codes: ['baseapp', 'morpho'] })
    expect(suffix).toBe('0x626173656170702c6d6f7270686f0e0080218021802180218021802180218021')
    expect(attributed(`0xa9059cbb${suffix.slice(2)}`).codes).toEqual(['baseapp', 'morpho'])
  })
})

describe('round trips through ox toDataSuffix', () => {
  const registry = { address: '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045' as const, chainId: 8453 }
  const cases: Array<[string, Attribution.Attribution, string[]]> = [
    ['schema 0', { codes: ['a'] }, ['a']],
    ['schema 0, many codes', { codes: ['baseapp', 'morpho', 'x_1'] }, ['baseapp', 'morpho', 'x_1']],
    ['schema 1', { codes: ['baseapp'], codeRegistry: registry }, ['baseapp']],
    ['schema 1 on chain 1', { codes: ['uni', 'v4'], codeRegistry: { ...registry, chainId: 1 } }, ['uni', 'v4']],
    ['schema 2 app only', { appCode: 'baseapp' }, ['baseapp']],
    [
      'schema 2 app, wallet, services, registries, metadata',
      {
        appCode: 'app1',
        walletCode: 'privy',
        serviceCodes: ['relay', 'solver_9'],
        registries: { app: registry, wallet: { ...registry, chainId: 10 } },
        metadata: { source: 'webapp', n: 3 },
      },
      ['app1', 'privy', 'relay', 'solver_9'],
    ],
  ]
  for (const [name, attribution, codes] of cases) {
    it(name, () => {
      const suffix = Attribution.toDataSuffix(attribution)
      const result = attributed(`0x12345678${'00'.repeat(31)}01${suffix.slice(2)}`)
      expect(result.codes).toEqual(codes)
      expect(result.suffix).toBe(suffix.toLowerCase())
      expect(result.suffixBytes).toBe((suffix.length - 2) / 2)
      expect(result.suffixGas).toBe(calldataGas(suffix))
      if ('codeRegistry' in attribution && attribution.codeRegistry) {
        expect(result.codeRegistry?.chainId).toBe(attribution.codeRegistry.chainId)
      }
    })
  }

  it('a suffix that is the whole calldata decodes', () => {
    expect(attributed(Attribution.toDataSuffix({ codes: ['solo'] })).codes).toEqual(['solo'])
  })

  it('the same code twice in one suffix is one code', () => {
    expect(attributed(Attribution.toDataSuffix({ appCode: 'same', walletCode: 'same' })).codes).toEqual(['same'])
  })

  it('codes outside the registry rule are kept and flagged invalid', () => {
    const result = attributed(Attribution.toDataSuffix({ codes: ['Good', 'ok', 'x'.repeat(33)] }))
    expect(result.entries.map((entry) => entry.valid)).toEqual([false, true, false])
  })
})

describe('malformed suffixes are reported, never thrown', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['marker alone', MARKER, /ends before the schema id/],
    ['codes length reaching before the start', `0x0500${MARKER_HEX}`.replace('0x0500', '0x6162ff00'), /before the start/],
    ['unknown schema id', `0x61016300${MARKER_HEX}`.replace(/00(?=8021)/, '07'), /unknown schema id 7/],
    ['bad CBOR', `0xff0001 02${MARKER_HEX}`.replace(' ', ''), /CBOR/],
    ['CBOR length before start', `0xa1ffff02${MARKER_HEX}`, /before the start/],
    ['schema 1 chain id above 2^53 - 1', `0x${'cc'.repeat(20)}2000000000000007610101${MARKER_HEX}`, /2\^53/],
    ['schema 1 without room for a registry', `0x61010001${MARKER_HEX}`.replace('0x61010001', '0x00610101'), /registry|chain id/],
    ['no codes', `0x0000${MARKER_HEX}`, /no codes/],
    ['odd-length hex', `0x0${MARKER_HEX}`, /whole bytes/],
    // found by the fault suite: a non-hex length byte read as -1 made a negative length and a RangeError
    ['non-hex codes length byte', `0x6162zz00${MARKER_HEX}`, /not hex/],
    ['non-hex CBOR length', `0xa1610zz002${MARKER_HEX}`.replace('0zz0', 'zz'), /not hex/],
  ]
  for (const [name, input, reason] of cases) {
    it(name, () => {
      const result = decodeAttribution(input)
      expect(result.kind).toBe('malformed')
      if (result.kind === 'malformed') expect(result.reason).toMatch(reason)
    })
  }

  it('calldata shorter than the marker is simply not attributed', () => {
    expect(decodeAttribution('0x8021')).toEqual({ kind: 'none' })
    expect(decodeAttribution('0x')).toEqual({ kind: 'none' })
    expect(decodeAttribution('')).toEqual({ kind: 'none' })
  })
})

/** Schema-2 calldata around a CBOR payload given as hex. */
const schema2 = (cbor: string) => `0x${cbor}${(cbor.length / 2).toString(16).padStart(4, '0')}02${MARKER_HEX}`

/** CBOR of `{ a: code, r: { a: { c: chainId, a: registry } } }` with `c` an unsigned integer of any size (ox's encoder stops at 2^32). */
function integerChainIdCbor(code: string, chainId: bigint, registry: string): string {
  const placeholder = Cbor.encode({ a: code, r: { a: { c: 1, a: registry } } }).slice(2)
  const uint =
    chainId < 24n ? chainId.toString(16).padStart(2, '0') : chainId < 2n ** 32n ? `1a${chainId.toString(16).padStart(8, '0')}` : `1b${chainId.toString(16).padStart(16, '0')}`
  // "c" (61 63) then the integer 1 (01)
  return placeholder.replace('616301', `6163${uint}`)
}

describe('findings of the differential fuzz against ox (issue 11)', () => {
  const registry = '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045' as const

  it('schema 2 with the registry chain id as a CBOR integer (the EIP example) decodes like ox', () => {
    const cbor = Cbor.encode({ a: 'baseapp', r: { a: { c: 8453, a: registry } } }).slice(2)
    const result = attributed(schema2(cbor))
    expect(result.codes).toEqual(['baseapp'])
    expect(result.registries).toEqual({ app: { chainId: 8453, address: registry } })
    expect(Attribution.fromData(schema2(cbor) as `0x${string}`)).toMatchObject({ registries: { app: { chainId: 8453 } } })
  })

  it.each([2 ** 48, 2 ** 52 + 1, Number.MAX_SAFE_INTEGER])('registry chain id %i (≥ 2^48) decodes in schemas 1 and 2', (chainId) => {
    const one = attributed(Attribution.toDataSuffix({ codes: ['uni'], codeRegistry: { address: registry, chainId } }))
    expect(one.codeRegistry).toEqual({ chainId, address: registry })
    const two = attributed(Attribution.toDataSuffix({ appCode: 'uni', registries: { app: { address: registry, chainId } } }))
    expect(two.registries).toEqual({ app: { chainId, address: registry } })
  })

  it('a registry chain id of 2^53 is malformed in schema 2 too (past what the column holds as a safe integer)', () => {
    const result = decodeAttribution(schema2(Cbor.encode({ a: 'uni', r: { a: { c: '0x20000000000000', a: registry } } }).slice(2)))
    expect(result).toMatchObject({ kind: 'malformed', reason: expect.stringMatching(/2\^53/) })
  })

  it('schema-2 integer chain ids are read up to 2^32 - 1: ox’s CBOR decoder, like ours, refuses 64-bit integers', () => {
    expect(attributed(schema2(integerChainIdCbor('uni', 2n ** 32n - 1n, registry))).registries).toEqual({ app: { chainId: 2 ** 32 - 1, address: registry } })
    const wide = schema2(integerChainIdCbor('uni', 2n ** 32n, registry))
    expect(decodeAttribution(wide)).toMatchObject({ kind: 'malformed', reason: expect.stringMatching(/64-bit/) })
    expect(() => Attribution.fromData(wide as `0x${string}`)).toThrow(/64-bit/)
  })

  it('a real U+FFFD inside a schema-2 code keeps that code, flagged invalid, and the codes beside it count', () => {
    const result = attributed(Attribution.toDataSuffix({ appCode: 'baseapp', walletCode: 'bad\uFFFDcode', serviceCodes: ['relay'] }))
    expect(result.entries).toEqual([
      { code: 'baseapp', role: 'app', valid: true },
      { code: 'bad\uFFFDcode', role: 'wallet', valid: false },
      { code: 'relay', role: 'service', valid: true },
    ])
  })

  it('schema-0 bytes that are not UTF-8 make one invalid code (read as ox reads it); the other codes count', () => {
    // "ok," then C3 28 (a broken two-byte sequence)
    const result = attributed(`0x6f6b2cc328050080218021802180218021802180218021`)
    expect(result.entries).toEqual([
      { code: 'ok', role: 'code', valid: true },
      { code: '\uFFFD(', role: 'code', valid: false },
    ])
    expect(Attribution.fromData('0x6f6b2cc328050080218021802180218021802180218021')).toEqual({ codes: ['ok', '\uFFFD('], id: 0 })
  })

  it('NUL inside a code (schemas 0 and 2) is stored as U+FFFD, flagged invalid: Postgres text cannot hold NUL', () => {
    expect(attributed(Attribution.toDataSuffix({ codes: ['a\u0000b', 'ok'] })).entries).toEqual([
      { code: 'a\uFFFDb', role: 'code', valid: false },
      { code: 'ok', role: 'code', valid: true },
    ])
    expect(attributed(Attribution.toDataSuffix({ appCode: 'ok', walletCode: '\u0000' })).codes).toEqual(['ok', '\uFFFD'])
  })

  it('accepts calldata written with a 0X prefix; the suffix it reports is 0x and lower case', () => {
    const suffix = Attribution.toDataSuffix({ codes: ['baseapp'] })
    const result = attributed(`0XA9059CBB${suffix.slice(2).toUpperCase()}`)
    expect(result.codes).toEqual(['baseapp'])
    expect(result.suffix).toBe(suffix)
  })
})

describe('detect', () => {
  it('finds the marker in hex and bytes', () => {
    expect(hasMarker(`0xabcd${MARKER_HEX}`)).toBe(true)
    expect(hasMarker(`0xabcd${MARKER_HEX.slice(0, -2)}22`)).toBe(false)
    expect(hasMarker('0xa9059cbb')).toBe(false)
    const bytes = new Uint8Array(20)
    bytes.set(Buffer.from(MARKER_HEX, 'hex'), 4)
    expect(hasMarkerBytes(bytes)).toBe(true)
    bytes[19] = 0x22
    expect(hasMarkerBytes(bytes)).toBe(false)
  })
})

describe('gas and code rules', () => {
  it('charges 16 per non-zero byte and 4 per zero byte', () => {
    expect(calldataGas('0x00ff0001')).toBe(4 + 16 + 4 + 16)
    expect(calldataGas('0x')).toBe(0)
  })
  it('accepts 1-32 characters of 0-9a-z_', () => {
    expect(isValidCode('a')).toBe(true)
    expect(isValidCode('a_9'.padEnd(32, 'z'))).toBe(true)
    expect(isValidCode('')).toBe(false)
    expect(isValidCode('A')).toBe(false)
    expect(isValidCode('a-b')).toBe(false)
    expect(isValidCode('a'.repeat(33))).toBe(false)
  })
})

describe('properties over random calldata', () => {
  const hexBytes = fc.uint8Array({ maxLength: 300 }).map((bytes) => `0x${Buffer.from(bytes).toString('hex')}`)

  it('never throws and never reports a suffix without the marker', () => {
    fc.assert(
      fc.property(hexBytes, (input) => {
        const result = decodeAttribution(input)
        if (!input.endsWith(MARKER_HEX)) expect(result.kind).toBe('none')
      }),
      { numRuns: 5_000 },
    )
  })

  it('never throws on random bytes followed by the marker', () => {
    fc.assert(
      fc.property(hexBytes, (input) => {
        const result = decodeAttribution(`${input}${MARKER_HEX}`)
        expect(['attributed', 'malformed']).toContain(result.kind)
      }),
      { numRuns: 5_000 },
    )
  })

  it('agrees with ox fromData on the codes of any well-formed schema 2 payload', () => {
    const text = fc.string({ maxLength: 12 })
    const cborish = fc.dictionary(fc.constantFrom('a', 'w', 's', 'x', 'm'), fc.oneof(text, fc.array(text, { maxLength: 3 }), fc.integer()), {
      maxKeys: 4,
    })
    fc.assert(
      fc.property(cborish, (map) => {
        const cbor = Cbor.encode(map)
        const length = (cbor.length - 2) / 2
        const input = `${cbor}${length.toString(16).padStart(4, '0')}02${MARKER_HEX}` as `0x${string}`
        const ours = decodeAttribution(input)
        const theirs = Attribution.fromData(input)
        const oxCodes = theirs?.id === 2 ? [theirs.appCode, theirs.walletCode, ...(theirs.serviceCodes ?? [])].filter((c) => typeof c === 'string') : []
        if (ours.kind === 'attributed') expect(ours.entries.map((e) => e.code)).toEqual(oxCodes)
        else expect(oxCodes).toEqual([])
      }),
      { numRuns: 2_000 },
    )
  })

  it('every generated suffix round-trips', () => {
    const code = fc.stringMatching(/^[0-9a-z_]{1,32}$/)
    fc.assert(
      fc.property(fc.array(code, { minLength: 1, maxLength: 5 }), hexBytes, (codes, prefix) => {
        const suffix = Attribution.toDataSuffix({ codes })
        const result = attributed(`${prefix}${suffix.slice(2)}`)
        expect(result.codes).toEqual([...new Set(codes)])
      }),
      { numRuns: 2_000 },
    )
  })
})

describe('bounded cost per suffix (limits.ts)', () => {
  const sha16 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16)

  it('a code past 64 bytes is kept invalid in its bounded form, distinct from its neighbours', () => {
    const long = 'y'.repeat(120)
    const longer = `${'y'.repeat(119)}z`
    const result = attributed(Attribution.toDataSuffix({ codes: [long, 'ok', longer] }))
    expect(result.codes).toEqual([`${'y'.repeat(40)}…${sha16(long)}`, 'ok', `${'y'.repeat(40)}…${sha16(longer)}`])
    expect(result.entries.map((entry) => entry.valid)).toEqual([false, true, false])
    expect(Buffer.byteLength(result.codes[0]!, 'utf8')).toBeLessThanOrEqual(64)
  })

  it('a code of exactly 64 bytes is kept as it is; multi-byte characters are never split', () => {
    expect(boundedCode('q'.repeat(64))).toBe('q'.repeat(64))
    const wide = '日'.repeat(30) // 90 bytes
    expect(boundedCode(wide)).toBe(`${'日'.repeat(13)}…${sha16(wide)}`)
  })

  it('a schema-2 code of 4.5 KB makes the suffix malformed (too long), with a short reason', () => {
    const result = decodeAttribution(Attribution.toDataSuffix({ appCode: 'x'.repeat(4500) }))
    expect(result).toMatchObject({ kind: 'malformed', schemaId: 2, reason: 'suffix is 4525 bytes, more than 4096' })
  })

  it('a schema-2 code of 4 KB fits the suffix and is stored bounded', () => {
    const code = 'x'.repeat(4000)
    expect(attributed(Attribution.toDataSuffix({ appCode: code })).codes).toEqual([`${'x'.repeat(40)}…${sha16(code)}`])
  })

  it('3,000 codes in one suffix (17 KB) or 33 in a short one are malformed; 32 are fine', () => {
    const many = Array.from({ length: 3000 }, (_, i) => `c${i}`)
    expect(decodeAttribution(Attribution.toDataSuffix({ appCode: 'ok', serviceCodes: many }))).toMatchObject({ kind: 'malformed', reason: /more than 4096/ })
    const thirtyThree = Array.from({ length: 33 }, (_, i) => `s${i}`)
    expect(decodeAttribution(Attribution.toDataSuffix({ serviceCodes: thirtyThree }))).toMatchObject({ kind: 'malformed', reason: 'suffix carries 33 codes, more than 32' })
    expect(decodeAttribution(Attribution.toDataSuffix({ codes: thirtyThree }))).toMatchObject({ kind: 'malformed', schemaId: 0, reason: 'suffix carries 33 codes, more than 32' })
    expect(attributed(Attribution.toDataSuffix({ appCode: 'a', serviceCodes: thirtyThree.slice(0, 31) })).codes).toHaveLength(32)
  })

  it('every reason is at most 200 characters', () => {
    for (let i = 0; i < 200; i++) {
      const garbage = `0x${randomBytes(1 + (i % 300)).toString('hex')}${((i % 300) + 1).toString(16).padStart(4, '0')}02${MARKER_HEX}`
      const result = decodeAttribution(garbage)
      if (result.kind === 'malformed') expect(result.reason.length).toBeLessThanOrEqual(ATTRIBUTION_LIMITS.maxReasonChars)
    }
    expect(boundedReason('r'.repeat(500))).toHaveLength(200)
  })
})

describe('remembered suffixes', () => {
  const calldataNaming = (code: string) => `0xa9059cbb${Attribution.toDataSuffix({ codes: [code] }).slice(2)}`

  it('are remembered from their second sighting, then handed out as one frozen answer no caller can change', () => {
    const input = `0xa9059cbb${Attribution.toDataSuffix({ appCode: 'frozen_app', serviceCodes: ['s1'], metadata: { k: ['v'] } } as never).slice(2)}`
    const seenOnce = attributed(input)
    const first = attributed(input)
    expect(first).not.toBe(seenOnce)
    expect(first).toEqual(seenOnce)
    expect(attributed(input)).toBe(first)
    expect(Object.isFrozen(first)).toBe(true)
    expect(() => first.codes.push('mutated')).toThrow(TypeError)
    expect(() => {
      ;(first.entries[0] as { valid: boolean }).valid = false
    }).toThrow(TypeError)
    expect(attributed(input).codes).toEqual(['frozen_app', 's1'])
  })

  it('stay remembered while a long tail of suffixes seen once passes by', () => {
    const busy = calldataNaming('busy_app')
    decodeAttribution(busy)
    const remembered = decodeAttribution(busy)
    // more one-off suffixes than the map holds: before the doorkeeper each one pushed out the oldest
    for (let i = 0; i < 10_000; i++) decodeAttribution(calldataNaming(`tail_${i}`))
    expect(decodeAttribution(busy)).toBe(remembered)
  })
})
