import { Attribution } from 'ox/erc8021'
import type { Random } from '../../devnet/random.js'

/**
 * Calldata shaped like what a real chain carries: a 4-byte selector followed
 * by ABI words (left-padded addresses, amounts with many leading zeros,
 * offsets, packed bytes). Only the shape matters to the benchmarks: the
 * detector reads the tail and JSON parsing reads every character, so sizes
 * and character mix must be realistic, the meaning need not be.
 */

const SELECTORS = {
  transfer: 'a9059cbb',
  approve: '095ea7b3',
  transferFrom: '23b872dd',
  deposit: 'd0e30db0',
  claim: '4e71d92d',
  mint: '1249c58b',
  withdraw: '2e1a7d4d',
  swapExactTokensForTokens: '38ed1739',
  exactInputSingle: '414bf389',
  multicall: 'ac9650d8',
  universalRouterExecute: '3593564c',
  aggregate3: '82ad56cb',
} as const

const SMALL_CALLS = [SELECTORS.deposit, SELECTORS.claim, SELECTORS.mint]
const SWAP_CALLS = [
  SELECTORS.swapExactTokensForTokens,
  SELECTORS.exactInputSingle,
  SELECTORS.multicall,
  SELECTORS.universalRouterExecute,
  SELECTORS.aggregate3,
]

const ZEROS = '0'.repeat(64)

function addressWord(random: Random): string {
  return ZEROS.slice(0, 24) + random.hex(20)
}

function amountWord(random: Random): string {
  const digits = random.between(4, 26)
  return ZEROS.slice(0, 64 - digits) + random.hex(Math.ceil(digits / 2)).slice(0, digits)
}

function smallIntWord(random: Random): string {
  return ZEROS.slice(0, 60) + random.hex(2)
}

/** One ABI word, in the proportions a swap or multicall payload shows. */
function abiWord(random: Random): string {
  const roll = random.next()
  if (roll < 0.3) return addressWord(random)
  if (roll < 0.55) return amountWord(random)
  if (roll < 0.75) return smallIntWord(random)
  if (roll < 0.85) return ZEROS
  return random.hex(32)
}

/** A call with only a selector, e.g. `deposit()`. */
export function fourByteCall(random: Random): string {
  return random.pick(SMALL_CALLS)
}

/** `transfer`/`approve` (68 bytes) or `transferFrom` (100 bytes). */
export function erc20Call(random: Random): string {
  const roll = random.next()
  if (roll < 0.6) return SELECTORS.transfer + addressWord(random) + amountWord(random)
  if (roll < 0.85) return SELECTORS.approve + addressWord(random) + amountWord(random)
  return SELECTORS.transferFrom + addressWord(random) + addressWord(random) + amountWord(random)
}

/** A router, aggregator or multicall payload of about `bytes` bytes (a selector plus whole words). */
export function abiCall(random: Random, bytes: number): string {
  const words = Math.max(1, Math.round((bytes - 4) / 32))
  const parts: string[] = [random.pick(SWAP_CALLS)]
  for (let i = 0; i < words; i++) parts.push(abiWord(random))
  return parts.join('')
}

/** Contract creation code: opaque bytes. */
export function initCode(random: Random, bytes: number): string {
  return `6080604052${random.hex(bytes - 5)}`
}

export { SELECTORS }

// ---------------------------------------------------------------------------
// ERC-8021 suffixes

export type SuffixSpec = {
  schemaId: 0 | 1 | 2
  /** Hex without 0x, ready to append to calldata. */
  suffixHex: string
  /** Distinct codes the suffix attributes, in suffix order. */
  codes: string[]
  /** EIP-2028 gas of the suffix bytes, computed here independently of the indexer's code. */
  gas: number
}

/** 16 gas per non-zero byte, 4 per zero byte (EIP-2028), of hex without 0x. */
export function calldataGasOf(hexWithoutPrefix: string): number {
  let gas = 0
  for (let i = 0; i + 1 < hexWithoutPrefix.length; i += 2) {
    gas += hexWithoutPrefix[i] === '0' && hexWithoutPrefix[i + 1] === '0' ? 4 : 16
  }
  return gas
}

const NAMED_CODES = [
  'baseapp', 'morpho', 'uniswap', 'aerodrome', 'zora', 'coinbase_wallet', 'rainbow', 'metamask', 'privy',
  'relay', 'lifi', 'socket', 'paraswap', 'oneinch', 'cowswap', 'farcaster', 'warpcast', 'moonwell', 'aave',
  'compound', 'seamless', 'extra_fi', 'virtuals', 'clanker', 'bankr', 'degen', 'friend_tech', 'basepaint',
] as const

export type CodePools = {
  /** Codes that appear in suffixes: named apps and wallets plus numbered long-tail apps. */
  codes: string[]
  registries: Array<{ address: `0x${string}`; chainId: number }>
}

/**
 * The codes a synthetic chain attributes to. `extraCodes` lets a caller add
 * builder codes of registered wallets (`bc_…`) so that both registered and
 * unregistered codes flow through the indexer.
 */
export function createCodePools(random: Random, longTail = 150, extraCodes: string[] = []): CodePools {
  const codes = [...NAMED_CODES, ...extraCodes]
  for (let i = 0; i < longTail; i++) codes.push(`app_${i.toString(36)}`)
  const registries = Array.from({ length: 6 }, (_, i) => ({
    address: `0x${random.hex(20)}` as `0x${string}`,
    chainId: [8453, 1, 10, 84532, 42161, 7777777][i]!,
  }))
  return { codes, registries }
}

/** A code drawn with a heavy head: a few apps carry most traffic, as on real chains. */
function drawCode(random: Random, pools: CodePools): string {
  const index = Math.min(pools.codes.length - 1, Math.floor(pools.codes.length * random.next() ** 3))
  return pools.codes[index]!
}

function distinctCodes(random: Random, pools: CodePools, count: number): string[] {
  const codes = new Set<string>()
  while (codes.size < count) codes.add(drawCode(random, pools))
  return [...codes]
}

/**
 * A valid ERC-8021 suffix built with ox's own encoder. Schema weights:
 * 55% schema 0, 15% schema 1, 30% schema 2 (app code, often a wallet code,
 * sometimes service codes, registries or metadata).
 */
export function attributionSuffix(random: Random, pools: CodePools): SuffixSpec {
  const roll = random.next()
  let attribution: Attribution.Attribution
  let schemaId: 0 | 1 | 2
  let codes: string[]
  if (roll < 0.55) {
    schemaId = 0
    codes = distinctCodes(random, pools, random.chance(0.8) ? 1 : random.between(2, 3))
    attribution = { codes }
  } else if (roll < 0.7) {
    schemaId = 1
    codes = distinctCodes(random, pools, random.between(1, 2))
    attribution = { codes, codeRegistry: random.pick(pools.registries) }
  } else {
    schemaId = 2
    codes = distinctCodes(random, pools, random.between(1, 4))
    const [appCode, walletCode, ...serviceCodes] = codes
    const schema2: Attribution.AttributionSchemaId2 = { appCode: appCode! }
    if (walletCode) schema2.walletCode = walletCode
    if (serviceCodes.length > 0) schema2.serviceCodes = serviceCodes
    if (random.chance(0.15)) schema2.registries = { app: random.pick(pools.registries) }
    if (random.chance(0.1)) schema2.metadata = { source: random.pick(['webapp', 'mobile', 'agent']), v: random.between(1, 9) }
    attribution = schema2
  }
  const suffixHex = Attribution.toDataSuffix(attribution).slice(2).toLowerCase()
  return { schemaId, suffixHex, codes, gas: calldataGasOf(suffixHex) }
}

/**
 * The suffix a flood repeats: schema 0 naming `count` short codes (`f0`,
 * `f1`, …), as an attacker filling blocks would, for the most rows per byte
 * of calldata (32 is the most a suffix may name and still count).
 */
export function floodSuffix(count: number): SuffixSpec {
  let suffix = floodSuffixes.get(count)
  if (!suffix) {
    const codes = Array.from({ length: count }, (_, i) => `f${i.toString(36)}`)
    const suffixHex = Attribution.toDataSuffix({ codes }).slice(2).toLowerCase()
    floodSuffixes.set(count, (suffix = { schemaId: 0, suffixHex, codes, gas: calldataGasOf(suffixHex) }))
  }
  return suffix
}
const floodSuffixes = new Map<number, SuffixSpec>()

/**
 * Calldata that ends with the marker but cannot be decoded (unknown schema
 * id 7): the indexer must count it as malformed and move on.
 */
export function malformedSuffixHex(random: Random): string {
  return `${random.hex(6)}0507${'8021'.repeat(8)}`
}
