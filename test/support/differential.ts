import { Attribution } from 'ox/erc8021'
import { getAddress } from 'viem'
import { decodeAttribution, type DecodeResult } from '../../src/attribution/decode.js'
import { MARKER_HEX } from '../../src/attribution/marker.js'
import { boundedCode } from '../../src/attribution/limits.js'
import { candidateFilter } from '../../src/attribution/records.js'
import { matchesFilter, scanBlockBatch, ScanFailed, type ScannedBlock } from '../../src/rpc/scan/block-scan.js'
import type { Random } from '../../devnet/random.js'
import { bundleDisagreement, eventDisagreement, randomBundleInput, randomEventLog } from './bundle-differential.js'

/**
 * Differential oracles (issue 11): the codec against ox/erc8021, the block
 * scanner against JSON.parse with the same filter. Shared by the small
 * seeded runs of `npm test` and the large ones of `npm run test:faults`.
 */

// ---------------------------------------------------------------------------
// Codec vs ox
// ---------------------------------------------------------------------------

/**
 * Where the codec refuses a suffix that ox reads, on purpose (README,
 * "ERC-8021 codec"): ox slices with negative offsets when a length reaches
 * before the start of the calldata and reads garbage; it passes any registry
 * address or chain id value through (a decimal or negative chain id, a
 * non-address), which no registry lookup could use.
 */
const DELIBERATE_REFUSALS =
  /reaches before the start|ends before|registry address is not an address|registry chain id is not an integer or hex|suffix is \d+ bytes, more than \d+|codes, more than \d+/

/**
 * Codes as the codec stores them: NUL becomes U+FFFD (Postgres text cannot
 * hold NUL), and a code past the length limit takes its bounded form
 * (README, "Bounded cost per transaction").
 */
const storable = (codes: readonly unknown[]) => [
  ...new Set(codes.filter((code): code is string => typeof code === 'string').map((code) => boundedCode(code.replaceAll('\0', '\uFFFD')))),
]

function referenceOf(input: string): { codes: string[]; chainIds: number[] } | 'refused' {
  let reference: Attribution.Attribution | undefined
  try {
    reference = Attribution.fromData(input as `0x${string}`)
  } catch {
    return 'refused'
  }
  if (!reference) return 'refused'
  if (reference.id === 2) {
    const registries = reference.registries ?? {}
    return {
      codes: storable([reference.appCode, reference.walletCode, ...(Array.isArray(reference.serviceCodes) ? reference.serviceCodes : [])]),
      chainIds: [registries.app?.chainId, registries.wallet?.chainId].filter((id): id is number => id !== undefined),
    }
  }
  return { codes: storable(reference.codes ?? []), chainIds: reference.codeRegistry ? [reference.codeRegistry.chainId] : [] }
}

/**
 * Why the codec and ox disagree on `input`, or undefined when they agree:
 * the codec attributes exactly the codes (and registry chain ids) ox reads,
 * and refuses only what ox refuses or one of the deliberate refusals above.
 * Only whole-byte hex inputs are compared (ox's behaviour on anything else
 * is undefined); the codec must not throw on any input.
 */
export function codecDisagreement(input: string): string | undefined {
  let ours: DecodeResult
  try {
    ours = decodeAttribution(input)
  } catch (error) {
    return `decodeAttribution threw: ${(error as Error).message}`
  }
  if (!/^0[xX]([0-9a-fA-F]{2})*$/.test(input) || !input.endsWith(MARKER_HEX)) return undefined
  const reference = referenceOf(input)
  const referenceCodes = reference === 'refused' ? [] : reference.codes
  if (ours.kind === 'attributed') {
    if (JSON.stringify(ours.codes) !== JSON.stringify(referenceCodes)) return `codes ${JSON.stringify(ours.codes)}, ox ${JSON.stringify(referenceCodes)}`
    const chainIds = [ours.codeRegistry?.chainId, ours.registries?.app?.chainId, ours.registries?.wallet?.chainId].filter((id) => id !== undefined)
    if (reference !== 'refused' && JSON.stringify(chainIds) !== JSON.stringify(reference.chainIds)) {
      return `registry chain ids ${JSON.stringify(chainIds)}, ox ${JSON.stringify(reference.chainIds)}`
    }
    return undefined
  }
  if (referenceCodes.length === 0) return undefined
  if (ours.kind === 'malformed' && DELIBERATE_REFUSALS.test(ours.reason)) return undefined
  return `codec says ${ours.kind}${ours.kind === 'malformed' ? ` (${ours.reason})` : ''}, ox reads ${JSON.stringify(referenceCodes)}`
}

// ---------------------------------------------------------------------------
// Scanner vs JSON.parse
// ---------------------------------------------------------------------------

const ENTRY_POINT = '0x0000000071727de22e5e9d8baf0edac6f37da032'
export const scanEntryPoints: ReadonlySet<string> = new Set([ENTRY_POINT, '0x0000000071727De22E5E9d8BAf0edAc6f37da032'])

function int(random: Random, max: number) {
  return Math.floor(random.next() * max)
}

function hex(random: Random, bytes: number) {
  let out = ''
  for (let i = 0; i < bytes; i++) out += int(random, 256).toString(16).padStart(2, '0')
  return out
}

/** A string value a hostile or unusual node could put in a transaction: quotes, escapes, brackets, non-ASCII. */
function oddString(random: Random): string {
  return random.pick(['say "hi"', 'back\\slash', '{[', ']}', '"transactions":[', 'tab\there', 'é日🎉', '\u0000', '', 'a,b:c', '\\"', `0x${MARKER_HEX}`])
}

function randomTo(random: Random): string | null {
  const roll = random.next()
  if (roll < 0.1) return null
  if (roll < 0.25) return ENTRY_POINT
  if (roll < 0.35) return random.pick([ENTRY_POINT.toUpperCase().replace('0X', '0x'), '0x0000000071727De22E5E9d8BAf0edAc6f37da032', '0x0000000071727dE22e5e9d8bAF0EDac6f37DA032'])
  return `0x${hex(random, 20)}`
}

function randomInput(random: Random): string {
  const roll = random.next()
  if (roll < 0.3) return `0x${hex(random, int(random, 40))}${MARKER_HEX}`
  if (roll < 0.35) return `0x${MARKER_HEX}`.slice(0, -1 - int(random, 3))
  return `0x${hex(random, int(random, 40))}`
}

function randomTransaction(random: Random, n: number): Record<string, unknown> {
  const tx: Record<string, unknown> = {
    blockHash: `0x${hex(random, 32)}`,
    blockNumber: '0x1',
    from: `0x${hex(random, 20)}`,
    gas: '0x5208',
    hash: `0x${n.toString(16).padStart(64, '0')}`,
    input: randomInput(random),
    nonce: `0x${int(random, 100).toString(16)}`,
    to: randomTo(random),
    transactionIndex: `0x${n.toString(16)}`,
    value: '0x0',
    accessList: random.next() < 0.5 ? [] : [{ address: `0x${hex(random, 20)}`, storageKeys: [`0x${hex(random, 32)}`] }],
  }
  if (random.next() < 0.2) tx.note = oddString(random)
  if (random.next() < 0.05) tx.input = random.pick([null, 7, { x: 1 }])
  if (random.next() < 0.05) delete tx.input
  if (random.next() < 0.05) tx.nested = { deep: [[{ to: ENTRY_POINT, input: `0x${MARKER_HEX}` }]] }
  return tx
}

/** JSON text of a value where some characters of some strings are written as \u escapes (valid JSON, as a node may send). */
function withUnicodeEscapes(random: Random, text: string): string {
  if (random.next() > 0.1) return text
  return text.replace(/"(input|to|hash)"/g, (match, key: string) =>
    random.next() < 0.5 ? `"\\u${key.charCodeAt(0).toString(16).padStart(4, '0')}${key.slice(1)}"` : match,
  )
}

/** One batch response of `eth_getBlockByNumber(n, true)` answers, and the numbers asked. */
export function randomScanBatch(random: Random): { text: string; numbers: number[] } {
  const count = 1 + int(random, 4)
  const numbers = Array.from({ length: count }, (_, i) => 100 + i)
  let txNumber = 0
  const items = numbers.map((number, id) => {
    const transactions = Array.from({ length: int(random, 8) }, () => randomTransaction(random, txNumber++))
    const result = {
      baseFeePerGas: '0x7',
      extraData: random.next() < 0.1 ? oddString(random) : '0x',
      hash: `0x${hex(random, 32)}`,
      number: `0x${number.toString(16)}`,
      parentHash: `0x${hex(random, 32)}`,
      timestamp: '0x6774858a',
      transactions,
      uncles: [],
    }
    return { jsonrpc: '2.0', id, result }
  })
  // answers in any order, as nodes and proxies send them
  if (random.next() < 0.3) items.reverse()
  return { text: withUnicodeEscapes(random, JSON.stringify(items)), numbers }
}

/** The values the indexer reads of a transaction (RawTransaction's), in the order the scanner gives them. */
const READ_KEYS = ['hash', 'from', 'to', 'input', 'transactionIndex', 'blockNumber', 'blockHash']

/** A candidate as the indexer holds it: its read values when each is a string (the scanner reads no more), else the whole transaction. */
export const readValues = (tx: Record<string, unknown>) =>
  READ_KEYS.every((key) => typeof tx[key] === 'string') ? Object.fromEntries(READ_KEYS.map((key) => [key, tx[key]])) : tx

/** What the indexer must end up with for a batch: JSON.parse and the same filter. */
export function parsedBatch(text: string, numbers: readonly number[], entryPoints: ReadonlySet<string>): ScannedBlock[] {
  const items = JSON.parse(text) as Array<{ result: { number: string; hash: `0x${string}`; parentHash: `0x${string}`; timestamp: string; transactions: Array<Record<string, unknown>> } }>
  const byNumber = new Map(items.map((item) => [Number.parseInt(item.result.number, 16), item.result]))
  return numbers.map((number) => {
    const block = byNumber.get(number)!
    return {
      number,
      hash: block.hash,
      parentHash: block.parentHash,
      timestamp: Number.parseInt(block.timestamp, 16),
      txCount: block.transactions.length,
      candidates: block.transactions.filter((tx) => matchesFilter(tx, candidateFilter(entryPoints))).map(readValues) as unknown as ScannedBlock['candidates'],
    }
  })
}

/**
 * Why the scanner disagrees with JSON.parse + the filter on `text`, or
 * undefined: it either gives up with ScanFailed (the caller then parses) or
 * returns exactly what the full parse gives. Anything else it throws is a
 * disagreement (a SyntaxError once escaped a range and failed it forever).
 */
export function scannerDisagreement(text: string, numbers: readonly number[], entryPoints = scanEntryPoints): { problem?: string; gaveUp: boolean } {
  let scanned: ScannedBlock[]
  try {
    scanned = scanBlockBatch(Buffer.from(text), numbers, candidateFilter(entryPoints))
  } catch (error) {
    if (error instanceof ScanFailed) return { gaveUp: true }
    return { problem: `threw ${(error as Error).name}: ${(error as Error).message}`, gaveUp: false }
  }
  const expected = parsedBatch(text, numbers, entryPoints)
  const a = JSON.stringify(scanned)
  const b = JSON.stringify(expected)
  return a === b ? { gaveUp: false } : { problem: `scan ${a.slice(0, 400)} ≠ parse ${b.slice(0, 400)}`, gaveUp: false }
}

// ---------------------------------------------------------------------------
// Codec inputs
// ---------------------------------------------------------------------------

const REGISTRY = 'd8da6bf26964af9d7eed9e03e53415d37aa96045'

/** CBOR text string header + bytes (short strings only). */
function cborText(bytes: string): string {
  const length = bytes.length / 2
  return length < 24 ? `${(0x60 + length).toString(16)}${bytes}` : `78${length.toString(16).padStart(2, '0')}${bytes}`
}

/** CBOR unsigned integer, 64-bit form included (which ox's decoder refuses). */
function cborUint(value: bigint): string {
  if (value < 24n) return value.toString(16).padStart(2, '0')
  if (value < 256n) return `18${value.toString(16).padStart(2, '0')}`
  if (value < 65_536n) return `19${value.toString(16).padStart(4, '0')}`
  if (value < 2n ** 32n) return `1a${value.toString(16).padStart(8, '0')}`
  return `1b${value.toString(16).padStart(16, '0')}`
}

const utf8 = (text: string) => Buffer.from(text, 'utf8').toString('hex')

/** Code bytes of the kinds issue 11's fuzz found mishandled: U+FFFD, NUL, bytes that are not UTF-8. */
function oddCodeBytes(random: Random): string {
  return random.pick([utf8('baseapp'), utf8('ok_1'), utf8('bad\uFFFD'), utf8('\uFFFD'), utf8('n\u0000l'), 'c328', 'ff', 'e282', utf8('Ünï'), ''])
}

/** Schema-2 suffixes with integer or hex chain ids across the whole range, and odd code bytes. */
function schema2Edge(random: Random): string {
  const chainId = random.pick([0n, 1n, 8453n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 48n, 2n ** 53n - 1n, 2n ** 53n])
  const c = random.next() < 0.5 ? cborUint(chainId) : cborText(utf8(`${random.pick(['0x', '0X'])}${chainId.toString(16)}`))
  const entries = [`61${'61'}${cborText(oddCodeBytes(random))}`]
  if (random.next() < 0.5) entries.push(`6177${cborText(oddCodeBytes(random))}`)
  if (random.next() < 0.5) entries.push(`6173${(0x80 + 2).toString(16)}${cborText(oddCodeBytes(random))}${cborText(oddCodeBytes(random))}`)
  if (random.next() < 0.6) entries.push(`6172a16161a2${'6163'}${c}${'6161'}${cborText(utf8(`0x${REGISTRY}`))}`)
  const cbor = `${(0xa0 + entries.length).toString(16)}${entries.join('')}`
  return `${cbor}${(cbor.length / 2).toString(16).padStart(4, '0')}02${MARKER_HEX}`
}

/** Schema 0/1 suffixes with odd code bytes and chain ids of 1 to 8 bytes. */
function schema01Edge(random: Random): string {
  const codes = Array.from({ length: 1 + int(random, 3) }, () => oddCodeBytes(random)).join('2c')
  const codesPart = `${codes}${(codes.length / 2).toString(16).padStart(2, '0')}`
  if (random.next() < 0.5) return `${codesPart}00${MARKER_HEX}`
  const chainId = random.pick([1n, 8453n, 2n ** 48n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 56n])
  let chainHex = chainId.toString(16)
  if (chainHex.length % 2) chainHex = `0${chainHex}`
  return `${REGISTRY}${chainHex}${(chainHex.length / 2).toString(16).padStart(2, '0')}${codesPart}01${MARKER_HEX}`
}

/** One codec input: the hostile-calldata mix, or one of the edge families above behind a prefix, sometimes `0X` and upper case. */
export function randomCodecInput(random: Random, hostileCalldata: (random: Random) => string): string {
  const roll = random.next()
  if (roll < 0.5) return hostileCalldata(random)
  const suffix = random.next() < 0.6 ? schema2Edge(random) : schema01Edge(random)
  const body = `${hex(random, random.pick([0, 4, 36]))}${suffix}`
  const cased = random.next() < 0.1 ? body.toUpperCase() : body
  return `${random.next() < 0.1 ? '0X' : '0x'}${cased}`
}

// ---------------------------------------------------------------------------
// Runs
// ---------------------------------------------------------------------------

export type DifferentialResult = {
  codecInputs: number
  batches: number
  /** Bundles (and receipts of UserOperationEvents) read by the EntryPoint reader and by viem. */
  bundles: number
  /** Bundles the fast reader read itself rather than leaving them to viem. */
  bundlesReadFast: number
  /** Batches the scanner gave up on (the caller then parses them whole). */
  scannerGaveUp: number
  /** A few disagreements, each with the input that reproduces it. */
  disagreements: Array<{ oracle: 'codec' | 'scanner' | 'bundle' | 'event'; input: string; problem: string }>
  disagreementCount: number
}

/**
 * The differential runs from one seed: `codecInputs` calldata inputs against
 * ox, `batches` batch responses against JSON.parse, `bundles` bundles and
 * receipts against viem.
 */
export function runDifferential(options: { random: Random; codecInputs: number; batches: number; bundles: number; hostileCalldata: (random: Random) => string }): DifferentialResult {
  const result: DifferentialResult = {
    codecInputs: options.codecInputs,
    batches: options.batches,
    bundles: options.bundles,
    bundlesReadFast: 0,
    scannerGaveUp: 0,
    disagreements: [],
    disagreementCount: 0,
  }
  const note = (oracle: DifferentialResult['disagreements'][number]['oracle'], input: string, problem: string) => {
    result.disagreementCount++
    if (result.disagreements.length < 10) result.disagreements.push({ oracle, input: input.slice(0, 2_000), problem })
  }
  for (let i = 0; i < options.codecInputs; i++) {
    const input = randomCodecInput(options.random, options.hostileCalldata)
    const problem = codecDisagreement(input)
    if (problem) note('codec', input, problem)
  }
  for (let i = 0; i < options.batches; i++) {
    const { text, numbers } = randomScanBatch(options.random)
    const { problem, gaveUp } = scannerDisagreement(text, numbers)
    if (gaveUp) result.scannerGaveUp++
    if (problem) note('scanner', `${JSON.stringify(numbers)} ${text}`, problem)
  }
  for (let i = 0; i < options.bundles; i++) {
    const input = randomBundleInput(options.random)
    const { problem, fast } = bundleDisagreement(input)
    if (fast) result.bundlesReadFast++
    if (problem) note('bundle', input, problem)
    const logs = Array.from({ length: 1 + Math.floor(options.random.next() * 3) }, () => randomEventLog(options.random, getAddress(ENTRY_POINT)))
    const eventProblem = eventDisagreement(logs, getAddress(ENTRY_POINT))
    if (eventProblem) note('event', JSON.stringify(logs), eventProblem)
  }
  return result
}
