import { createHash } from 'node:crypto'
import { Attribution } from 'ox/erc8021'
import type { Hex } from 'viem'
import { decodeAttribution } from '../../../src/attribution/decode.js'
import { MARKER_HEX } from '../../../src/attribution/marker.js'
import type { Random } from '../../../devnet/random.js'

/**
 * Hostile suffix shapes for the fault suite (issue 20.1): random code
 * lengths (up to 5 KB), code counts (up to 3,000), schemas 0/1/2 and garbage
 * around the marker, each with what the index must count for it. The
 * expectation is worked out from the limits README states (a code past 64
 * bytes → invalid, `first 40 bytes…16 hex of its SHA-256`; a suffix past
 * 4096 bytes or 32 codes → malformed), not by calling the indexer's
 * decoder — except for random bytes ending in the marker, whose verdict is
 * the decoder's own (the codec is held to ox by faults 6 and 8): what is
 * checked there is that the range commits and nothing else moves.
 */
export type HostileShape = {
  name: string
  calldata: Hex
  /** Codes counted for it, in no order; undefined: a malformed suffix; []: nothing at all (no marker at the end). */
  codes: string[] | undefined
  schemaId: 0 | 1 | 2
  /** The suffix the index stores (its gas is counted per row). */
  suffix: Hex
}

const MAX_CODE_BYTES = 64
const MAX_SUFFIX_BYTES = 4096
const MAX_SUFFIX_CODES = 32
const CODE_CHARACTERS = 'abcdefghijklmnopqrstuvwxyz0123456789_ABCXYZ-.;=+ é日🙂'

/** The stored form of a code, from the rule as README states it. */
export function expectedCode(code: string): string {
  const bytes = Buffer.from(code, 'utf8')
  if (bytes.length <= MAX_CODE_BYTES) return code
  let prefix = ''
  let size = 0
  for (const char of code) {
    const width = Buffer.byteLength(char, 'utf8')
    if (size + width > 40) break
    prefix += char
    size += width
  }
  return `${prefix}…${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}`
}

/** EIP-2028 gas of hex bytes: 4 per zero byte, 16 per other. */
export function suffixGasOf(hex: Hex): number {
  let gas = 0
  for (let i = 2; i < hex.length; i += 2) gas += hex.slice(i, i + 2) === '00' ? 4 : 16
  return gas
}

function randomCode(random: Random, length: number): string {
  let code = ''
  const characters = [...CODE_CHARACTERS]
  // mostly ASCII letters, a few of anything else (never a comma: it separates schema 0/1 codes)
  for (let i = 0; i < length; i++) code += random.chance(0.9) ? characters[random.int(37)]! : random.pick(characters)
  return code
}

function codeList(random: Random, count: number, maxLength: number): string[] {
  return Array.from({ length: count }, (_, i) => `${i}${randomCode(random, random.logBetween(1, maxLength))}`)
}

const unique = (codes: readonly string[]) => [...new Set(codes.map(expectedCode))]

/** Schema 0 or 1: up to 255 bytes of codes, as many as 120 of them, one sometimes 65-250 bytes long. */
function schema01(random: Random): { suffix: Hex; codes: string[] | undefined; schemaId: 0 | 1 } {
  const schemaId = random.chance(0.5) ? 0 : 1
  let codes = random.chance(0.3) ? [randomCode(random, random.between(65, 240))] : codeList(random, random.logBetween(1, 120), 12)
  while (Buffer.byteLength(codes.join(','), 'utf8') > 255) codes = codes.slice(1)
  if (codes.length === 0) codes = ['ok']
  const codeRegistry = { address: '0x00000000000000000000000000000000000c0de1' as const, chainId: random.between(1, 100_000) }
  const suffix = schemaId === 0 ? Attribution.toDataSuffix({ codes }) : Attribution.toDataSuffix({ codes, codeRegistry })
  return { suffix, schemaId, codes: codes.length > MAX_SUFFIX_CODES ? undefined : unique(codes) }
}

/** Schema 2: an app code of 1 B to 5 KB, sometimes a wallet code, 0 to 3,000 service codes. */
function schema2(random: Random): { suffix: Hex; codes: string[] | undefined; schemaId: 2 } {
  const appCode = randomCode(random, random.logBetween(1, 5000))
  const walletCode = random.chance(0.3) ? randomCode(random, random.logBetween(1, 100)) : undefined
  const serviceCodes = random.chance(0.6) ? codeList(random, random.logBetween(1, 3000), 8) : undefined
  const suffix = Attribution.toDataSuffix({ appCode, walletCode, serviceCodes })
  const all = [appCode, ...(walletCode ? [walletCode] : []), ...(serviceCodes ?? [])]
  const tooLong = (suffix.length - 2) / 2 > MAX_SUFFIX_BYTES
  return { suffix, schemaId: 2, codes: tooLong || all.length > MAX_SUFFIX_CODES ? undefined : unique(all) }
}

/** One hostile transaction's calldata and what it must count as. */
export function hostileShape(random: Random): HostileShape {
  const roll = random.next()
  const built = random.chance(0.5) ? schema01(random) : schema2(random)
  const selector = `0x${random.hex(4)}`
  if (roll < 0.6) {
    // garbage before the suffix, of any length: only the suffix's own length fields count
    return { name: `schema ${built.schemaId}, garbage before`, calldata: `${selector}${random.hex(random.int(300))}${built.suffix.slice(2)}` as Hex, ...built }
  }
  if (roll < 0.75) {
    // garbage after the marker: the calldata no longer ends with it, nothing is attributed
    let tail = random.hex(random.between(1, 40))
    if (`${built.suffix}${tail}`.endsWith(MARKER_HEX)) tail += 'ff'
    return { name: 'garbage after the marker', calldata: `${selector}${built.suffix.slice(2)}${tail}` as Hex, ...built, codes: [] }
  }
  // random bytes ending in the marker, random schema byte and length field: the decoder's verdict (see above)
  const body = random.hex(random.logBetween(1, 6000))
  const schemaByte = random.pick(['00', '01', '02', random.hex(1)])
  const length = schemaByte === '02' ? random.pick([random.hex(2), ((body.length / 2) & 0xffff).toString(16).padStart(4, '0')]) : random.pick([random.hex(1), 'ff'])
  const calldata = `${selector}${body}${length}${schemaByte}${MARKER_HEX}` as Hex
  const verdict = decodeAttribution(calldata)
  if (verdict.kind === 'attributed') return { name: 'random bytes and marker', calldata, codes: verdict.codes, schemaId: verdict.schemaId, suffix: verdict.suffix }
  return { name: 'random bytes and marker', calldata, codes: verdict.kind === 'malformed' ? undefined : [], schemaId: 0, suffix: '0x' }
}
