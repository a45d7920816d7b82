import { Attribution } from 'ox/erc8021'
import { encodeFunctionData, getAddress, type Address, type Hex } from 'viem'
import { entryPoint06Abi, entryPoint06Address, entryPoint07Abi, entryPoint07Address } from 'viem/account-abstraction'
import { decodeAttribution, type DecodeResult } from '../../../src/attribution/decode.js'
import { calldataGas } from '../../../src/attribution/gas.js'
import { boundedCode } from '../../../src/attribution/limits.js'
import { MARKER_HEX } from '../../../src/attribution/marker.js'
import { detectCandidate } from '../../../src/attribution/records.js'
import type { RawTransaction } from '../../../src/rpc/objects.js'
import { entryPointSet } from '../../../src/attribution/userops.js'
import { createRandom, type Random } from '../../../devnet/random.js'

/**
 * Hostile calldata for the codec: valid ERC-8021 suffixes built with the
 * reference encoder (ox), the same suffixes mutated (bit flips, truncations,
 * length and schema bytes rewritten, bad UTF-8, odd hex), random bytes
 * ending in the marker, and EntryPoint bundles carrying all of those in
 * their UserOperations. Deterministic for a seed, so a failure reproduces.
 */

export type FuzzFailure = { kind: 'throw' | 'round-trip' | 'invariant'; input: string; detail: string }

export type CalldataFuzzResult = {
  inputs: number
  /** Inputs by how they were made. */
  made: { valid: number; mutated: number; random: number; bundles: number }
  /** decodeAttribution outcomes over the non-bundle inputs. */
  decoded: { none: number; malformed: number; attributed: number }
  /** Valid suffixes whose decoded codes equal what was encoded (and what ox reads back). */
  roundTrips: number
  throws: number
  failures: FuzzFailure[]
}

type Expected = { hex: Hex; codes: string[]; registry?: { chainId: number; address: Address } }

const MARKER = MARKER_HEX
const entryPoints = entryPointSet([entryPoint06Address, entryPoint07Address])
const MAX_FAILURES_KEPT = 20

function randomInt(random: Random, max: number): number {
  return Math.floor(random.next() * max)
}

function randomHexBytes(random: Random, count: number): string {
  let out = ''
  for (let i = 0; i < count; i++) out += randomInt(random, 256).toString(16).padStart(2, '0')
  return out
}

const CODE_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789_'
const ODD_CODES = ['Bad-Code', 'UPPER', 'with space', 'ünïcödé', '日本語', '🙂🙃', 'x'.repeat(40), 'tab\there', 'quote"q', 'nul\u0000byte', '\u202eRTL']

/** Mostly registry-valid codes, sometimes anything else a suffix may carry (never a comma: it separates codes). */
function randomCode(random: Random): string {
  if (random.next() < 0.15) return random.pick(ODD_CODES)
  const length = 1 + randomInt(random, 32)
  let code = ''
  for (let i = 0; i < length; i++) code += CODE_ALPHABET[randomInt(random, CODE_ALPHABET.length)]
  return code
}

function randomCodes(random: Random, max: number): string[] {
  return Array.from({ length: 1 + randomInt(random, max) }, () => randomCode(random))
}

function randomRegistry(random: Random): { chainId: number; address: Address } {
  const chainIds = [1, 10, 8453, 84532, 31337, 2 ** 32, 2 ** 40 - 1]
  return { chainId: random.pick(chainIds), address: getAddress(`0x${randomHexBytes(random, 20)}`) }
}

function randomMetadata(random: Random, depth = 0): unknown {
  const roll = random.next()
  if (depth > 3 || roll < 0.3) return randomInt(random, 1_000_000)
  if (roll < 0.5) return randomCode(random)
  if (roll < 0.6) return random.next() < 0.5
  if (roll < 0.8) return Array.from({ length: randomInt(random, 4) }, () => randomMetadata(random, depth + 1))
  return Object.fromEntries(Array.from({ length: randomInt(random, 4) }, (_, i) => [`k${i}`, randomMetadata(random, depth + 1)]))
}

/** Codes as the codec stores them: NUL, which Postgres text cannot hold, becomes U+FFFD (the code is invalid either way). */
/** Codes as stored: NUL as U+FFFD, a code past 64 bytes in its bounded form (README, "Bounded cost per transaction"). */
const unique = (codes: readonly string[]) => [...new Set(codes.map((code) => boundedCode(code.replaceAll('\0', '\uFFFD'))))]
const utf8Length = (codes: readonly string[]) => Buffer.byteLength(codes.join(','), 'utf8')

/** A suffix the reference encoder builds, and the codes (and registry) it must decode to. */
function validSuffix(random: Random): Expected {
  const schema = randomInt(random, 3)
  if (schema === 0 || schema === 1) {
    let codes = randomCodes(random, 5)
    // the codes length is one byte: longer code lists cannot be encoded
    while (utf8Length(codes) > 255) codes = codes.slice(1)
    if (schema === 0) return { hex: Attribution.toDataSuffix({ codes }), codes: unique(codes) }
    const registry = randomRegistry(random)
    return { hex: Attribution.toDataSuffix({ codes, codeRegistry: registry }), codes: unique(codes), registry }
  }
  const appCode = random.next() < 0.9 ? randomCode(random) : undefined
  const walletCode = random.next() < 0.6 ? randomCode(random) : undefined
  const serviceCodes = random.next() < 0.4 ? randomCodes(random, 3) : undefined
  const fields: Attribution.AttributionSchemaId2 = { appCode: appCode ?? (walletCode || serviceCodes ? undefined : randomCode(random)) }
  if (walletCode) fields.walletCode = walletCode
  if (serviceCodes) fields.serviceCodes = serviceCodes
  if (random.next() < 0.3) fields.registries = { app: randomRegistry(random), ...(random.next() < 0.5 && { wallet: randomRegistry(random) }) }
  if (random.next() < 0.3) fields.metadata = randomMetadata(random, 1) as Record<string, unknown>
  const codes = [fields.appCode, fields.walletCode, ...(fields.serviceCodes ?? [])].filter((code): code is string => code !== undefined)
  return { hex: Attribution.toDataSuffix(fields), codes: unique(codes) }
}

/** Calldata before the suffix: nothing, a selector, or a selector and ABI words. */
function randomPrefix(random: Random): string {
  const roll = random.next()
  if (roll < 0.2) return ''
  if (roll < 0.5) return randomHexBytes(random, 4)
  return randomHexBytes(random, 4 + 32 * randomInt(random, 6))
}

/** One or more corruptions of hex calldata, biased towards the suffix's tail where the length and schema bytes live. */
function mutate(random: Random, hex: string, options: { keepHex?: boolean } = {}): string {
  let body = hex.slice(2)
  const kinds = options.keepHex ? 10 : 12
  const rounds = 1 + randomInt(random, 3)
  for (let round = 0; round < rounds; round++) {
    const bytes = body.length / 2
    if (bytes === 0) break
    const tailPosition = () => Math.max(0, bytes - 1 - randomInt(random, Math.min(bytes, 48)))
    const anyPosition = () => randomInt(random, bytes)
    const position = random.next() < 0.7 ? tailPosition() : anyPosition()
    const setByte = (at: number, value: number) => {
      body = body.slice(0, 2 * at) + value.toString(16).padStart(2, '0') + body.slice(2 * at + 2)
    }
    const byteAt = (at: number) => Number.parseInt(body.slice(2 * at, 2 * at + 2), 16)
    switch (randomInt(random, kinds)) {
      case 0: // bit flip
        setByte(position, byteAt(position) ^ (1 << randomInt(random, 8)))
        break
      case 1: // drop leading bytes: a length field may now reach before the start
        body = body.slice(2 * Math.min(bytes, 1 + randomInt(random, bytes)))
        break
      case 2: // drop trailing bytes
        body = body.slice(0, 2 * Math.max(0, bytes - 1 - randomInt(random, 4)))
        break
      case 3: // the codes length byte (schema 0/1) or the low CBOR length byte (schema 2)
        if (bytes > 17) setByte(bytes - 18, randomInt(random, 256))
        break
      case 4: // the high CBOR length byte
        if (bytes > 18) setByte(bytes - 19, randomInt(random, 256))
        break
      case 5: // the schema id
        if (bytes > 16) setByte(bytes - 17, random.pick([0, 1, 2, 3, 0x7f, 0xff, randomInt(random, 256)]))
        break
      case 6: // insert a byte
        body = body.slice(0, 2 * position) + randomHexBytes(random, 1) + body.slice(2 * position)
        break
      case 7: // delete a byte
        body = body.slice(0, 2 * position) + body.slice(2 * position + 2)
        break
      case 8: // bytes that are not UTF-8 where the codes are
        setByte(position, random.pick([0xc0, 0xc1, 0xf5, 0xff, 0x80, 0xed]))
        break
      case 9: // a second suffix, or the marker alone, appended
        body += random.next() < 0.5 ? body.slice(Math.max(0, body.length - 80)) : MARKER
        break
      case 10: // odd length hex: half a byte missing
        body = body.slice(1)
        break
      default: // letters that are not hex, or upper case hex
        body = random.next() < 0.5 ? body.toUpperCase() : body.slice(0, 2 * position) + random.pick(['zz', 'g0', '  ', '0x']) + body.slice(2 * position + 2)
    }
  }
  return `0x${body}`
}

/** Bytes that end in the marker with random schema and length bytes: what a hostile sender can put on chain. */
function randomMarked(random: Random): string {
  const roll = random.next()
  if (roll < 0.1) return `0x${randomHexBytes(random, randomInt(random, 64))}`
  if (roll < 0.2) return `0x${MARKER}`
  const schema = random.next() < 0.8 ? randomInt(random, 3) : randomInt(random, 256)
  const body = randomHexBytes(random, randomInt(random, 80))
  const length = random.next() < 0.5 ? randomHexBytes(random, 1) : (body.length / 2).toString(16).padStart(2, '0').slice(-2)
  const cborLength = random.next() < 0.5 ? randomHexBytes(random, 2) : (body.length / 2).toString(16).padStart(4, '0').slice(-4)
  const lengthField = schema === 2 ? cborLength : length
  return `0x${body}${lengthField}${schema.toString(16).padStart(2, '0')}${MARKER}`
}

/** An op's callData: a call, maybe followed by a valid, mutated or random suffix. */
function operationCallData(random: Random): { callData: Hex; expected?: Expected } {
  const call = `0xb61d27f6${randomHexBytes(random, 32 * (1 + randomInt(random, 4)))}`
  const roll = random.next()
  if (roll < 0.4) {
    const expected = validSuffix(random)
    return { callData: `${call}${expected.hex.slice(2)}` as Hex, expected }
  }
  if (roll < 0.7) return { callData: mutate(random, `${call}${validSuffix(random).hex.slice(2)}`, { keepHex: true }) as Hex }
  if (roll < 0.85) return { callData: `${call}${randomMarked(random).slice(2)}` as Hex }
  return { callData: call as Hex }
}

/** handleOps (0.6 or 0.7 layout) or handleAggregatedOps bundle calldata and what its ops should decode to. */
function bundle(random: Random): { input: Hex; to: Address; ops: Array<Expected | undefined> } {
  const count = 1 + randomInt(random, 4)
  const ops = Array.from({ length: count }, () => operationCallData(random))
  const sender = () => getAddress(`0x${randomHexBytes(random, 20)}`)
  const beneficiary = sender()
  const layout = randomInt(random, 3)
  if (layout === 0) {
    const userOps = ops.map(({ callData }, i) => ({
      sender: sender(),
      nonce: BigInt(i),
      initCode: '0x' as Hex,
      callData,
      callGasLimit: 100_000n,
      verificationGasLimit: 100_000n,
      preVerificationGas: 21_000n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      paymasterAndData: '0x' as Hex,
      signature: `0x${randomHexBytes(random, 65)}` as Hex,
    }))
    return {
      input: encodeFunctionData({ abi: entryPoint06Abi, functionName: 'handleOps', args: [userOps, beneficiary] }),
      to: entryPoint06Address,
      ops: ops.map((op) => op.expected),
    }
  }
  const packed = ops.map(({ callData }, i) => ({
    sender: sender(),
    nonce: BigInt(i),
    initCode: '0x' as Hex,
    callData,
    accountGasLimits: `0x${'00'.repeat(32)}` as Hex,
    preVerificationGas: 21_000n,
    gasFees: `0x${'00'.repeat(32)}` as Hex,
    paymasterAndData: '0x' as Hex,
    signature: `0x${randomHexBytes(random, 65)}` as Hex,
  }))
  const input =
    layout === 1
      ? encodeFunctionData({ abi: entryPoint07Abi, functionName: 'handleOps', args: [packed, beneficiary] })
      : encodeFunctionData({
          abi: entryPoint07Abi,
          functionName: 'handleAggregatedOps',
          args: [[{ userOps: packed, aggregator: sender(), signature: '0x' }], beneficiary],
        })
  return { input, to: entryPoint07Address, ops: ops.map((op) => op.expected) }
}

function sameCodes(actual: readonly string[], expected: readonly string[]): boolean {
  return actual.length === expected.length && actual.every((code, i) => code === expected[i])
}

/** What must hold of any decode result, whatever the input. */
function invariantProblem(input: string, result: DecodeResult): string | undefined {
  if (result.kind === 'none' || result.kind === 'malformed') {
    if (result.kind === 'malformed' && typeof result.reason !== 'string') return 'malformed without a reason'
    return undefined
  }
  if (result.kind !== 'attributed') return `unknown kind ${(result as { kind: unknown }).kind}`
  if (result.codes.length === 0) return 'attributed with no codes'
  if (!input.toLowerCase().endsWith(result.suffix.slice(2))) return 'suffix is not the tail of the input'
  if (result.suffixBytes !== (result.suffix.length - 2) / 2) return 'suffixBytes disagrees with the suffix'
  if (result.suffixGas !== calldataGas(result.suffix)) return 'suffixGas disagrees with EIP-2028'
  if (!sameCodes(result.codes, unique(result.entries.map((entry) => entry.code)))) return 'codes disagree with entries'
  // the reference decoder must read the same codes from the suffix the codec cut out
  const reference = Attribution.fromData(result.suffix)
  if (!reference) return 'ox does not decode the suffix the codec attributed'
  const referenceCodes = reference.id === 2 ? [reference.appCode, reference.walletCode, ...(reference.serviceCodes ?? [])] : [...(reference.codes ?? [])]
  if (!sameCodes(result.codes, unique(referenceCodes.filter((code): code is string => typeof code === 'string')))) {
    return 'codes differ from what ox decodes from the same suffix'
  }
  return undefined
}

/** One calldata input of the mix below (valid, mutated or random marked; no bundles), for other fuzzers to reuse. */
export function hostileCalldata(random: Random): string {
  const roll = random.next()
  if (roll < 0.35) return `0x${randomPrefix(random)}${validSuffix(random).hex.slice(2)}`
  if (roll < 0.8) return mutate(random, `0x${randomPrefix(random)}${validSuffix(random).hex.slice(2)}`, { keepHex: random.next() < 0.8 })
  return randomMarked(random)
}

export function runCalldataFuzz({ seed, count }: { seed: number; count: number }): CalldataFuzzResult {
  const random = createRandom(seed)
  const result: CalldataFuzzResult = {
    inputs: 0,
    made: { valid: 0, mutated: 0, random: 0, bundles: 0 },
    decoded: { none: 0, malformed: 0, attributed: 0 },
    roundTrips: 0,
    throws: 0,
    failures: [],
  }
  const fail = (failure: FuzzFailure) => {
    if (failure.kind === 'throw') result.throws++
    if (result.failures.length < MAX_FAILURES_KEPT) result.failures.push(failure)
  }

  function decodeChecked(input: string): DecodeResult | undefined {
    let decoded: DecodeResult
    try {
      decoded = decodeAttribution(input)
    } catch (error) {
      fail({ kind: 'throw', input, detail: `decodeAttribution: ${(error as Error).stack ?? error}` })
      return undefined
    }
    result.decoded[decoded.kind]++
    try {
      const problem = invariantProblem(input, decoded)
      if (problem) fail({ kind: 'invariant', input, detail: problem })
    } catch (error) {
      fail({ kind: 'invariant', input, detail: `checking the result threw: ${(error as Error).message}` })
    }
    return decoded
  }

  function checkRoundTrip(input: string, expected: Expected, decoded: DecodeResult | undefined) {
    if (!decoded) return
    const ok =
      decoded.kind === 'attributed' &&
      sameCodes(decoded.codes, expected.codes) &&
      (!expected.registry || (decoded.codeRegistry?.chainId === expected.registry.chainId && decoded.codeRegistry.address === expected.registry.address))
    if (ok) result.roundTrips++
    else fail({ kind: 'round-trip', input, detail: `expected ${JSON.stringify(expected.codes)}, got ${JSON.stringify(decoded)}` })
  }

  for (let i = 0; i < count; i++) {
    result.inputs++
    const roll = random.next()
    if (roll < 0.3) {
      result.made.valid++
      const expected = validSuffix(random)
      const input = `0x${randomPrefix(random)}${expected.hex.slice(2)}`
      checkRoundTrip(input, expected, decodeChecked(input))
    } else if (roll < 0.75) {
      result.made.mutated++
      decodeChecked(mutate(random, `0x${randomPrefix(random)}${validSuffix(random).hex.slice(2)}`))
    } else if (roll < 0.95) {
      result.made.random++
      decodeChecked(randomMarked(random))
    } else {
      result.made.bundles++
      const made = bundle(random)
      const input = random.next() < 0.5 ? made.input : (mutate(random, made.input) as Hex)
      const tx: RawTransaction = { hash: `0x${'ab'.repeat(32)}`, from: made.to, to: made.to, input: input as Hex, transactionIndex: '0x0' }
      try {
        const candidate = detectCandidate(tx, entryPoints)
        if (input === made.input) {
          // unmutated: every op with a valid suffix is attributed with exactly its codes
          const attributed = new Map(candidate?.attributedOps.map(({ op, result: decoded }) => [op.index, decoded.codes]) ?? [])
          for (const [index, expected] of made.ops.entries()) {
            if (!expected) continue
            const codes = attributed.get(index)
            if (codes && sameCodes(codes, expected.codes)) result.roundTrips++
            else fail({ kind: 'round-trip', input, detail: `op ${index}: expected ${JSON.stringify(expected.codes)}, got ${JSON.stringify(codes)}` })
          }
        }
      } catch (error) {
        fail({ kind: 'throw', input, detail: `detectCandidate: ${(error as Error).stack ?? error}` })
      }
    }
  }
  return result
}
