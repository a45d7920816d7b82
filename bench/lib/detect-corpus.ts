import { abiCall, attributionSuffix, createCodePools, erc20Call, fourByteCall } from './calldata.js'
import { createRandom, type Random } from '../../devnet/random.js'

export type DetectCorpus = {
  inputs: string[]
  /** How many inputs carry a valid suffix, and of which schema. */
  attributed: number
  bySchema: Record<0 | 1 | 2, number>
  byKind: { fourByte: number; erc20: number; large: number }
  /** Distinct large payloads: the large inputs reuse them (see buildDetectCorpus). */
  largePool: number
  /** Characters held by distinct strings, a proxy for the corpus' memory. */
  distinctChars: number
}

export type DetectCorpusOptions = {
  size: number
  seed: number
  /** Share of inputs with a suffix (the issue: about 2%). */
  attributedRate: number
  /** Share of 1–10 KB payloads; the rest splits 1:2 between 4-byte calls and ERC-20 calls. */
  largeRate: number
  /** Distinct large payloads. */
  largePool: number
}

type Kind = 'fourByte' | 'erc20' | 'large'

function drawKind(random: Random, largeRate: number): Kind {
  const roll = random.next()
  if (roll < largeRate) return 'large'
  return roll < largeRate + (1 - largeRate) / 3 ? 'fourByte' : 'erc20'
}

function body(random: Random, kind: Kind): string {
  if (kind === 'fourByte') return fourByteCall(random)
  if (kind === 'erc20') return erc20Call(random)
  return abiCall(random, random.logBetween(1024, 10 * 1024))
}

/**
 * A calldata corpus in the form the indexer sees it: hex strings produced
 * by JSON.parse (flat, one byte per character, each its own object).
 *
 * Holding a million distinct 1–10 KB payloads would take gigabytes, so the
 * large non-attributed inputs point at a pool of `largePool` distinct
 * strings (tens of MB, far beyond the CPU caches). That is fair to every
 * variant: the tail compare reads the last 32 characters and ox's fromData
 * slices without copying, so neither can profit from seeing a string again.
 * Attributed inputs are all distinct.
 */
export function buildDetectCorpus(options: DetectCorpusOptions): DetectCorpus {
  const random = createRandom(options.seed)
  const pools = createCodePools(random)
  const largeBodies: string[] = []
  for (let i = 0; i < options.largePool; i++) largeBodies.push(`0x${body(random, 'large')}`)
  const large = JSON.parse(JSON.stringify(largeBodies)) as string[]

  const own: string[] = []
  const slots: Array<number> = []
  const bySchema = { 0: 0, 1: 0, 2: 0 }
  const byKind = { fourByte: 0, erc20: 0, large: 0 }
  let attributed = 0
  for (let i = 0; i < options.size; i++) {
    const kind = drawKind(random, options.largeRate)
    byKind[kind]++
    if (random.chance(options.attributedRate)) {
      const suffix = attributionSuffix(random, pools)
      attributed++
      bySchema[suffix.schemaId]++
      slots.push(own.length)
      own.push(`0x${body(random, kind)}${suffix.suffixHex}`)
    } else if (kind === 'large') {
      slots.push(-1 - random.int(large.length))
    } else {
      slots.push(own.length)
      own.push(`0x${body(random, kind)}`)
    }
  }
  const parsed = JSON.parse(JSON.stringify(own)) as string[]
  const inputs = slots.map((slot) => (slot >= 0 ? parsed[slot]! : large[-1 - slot]!))
  const distinctChars = parsed.reduce((sum, s) => sum + s.length, 0) + large.reduce((sum, s) => sum + s.length, 0)
  return { inputs, attributed, bySchema, byKind, largePool: large.length, distinctChars }
}
