/**
 * The one seeded pseudo-random source of the devnet's traffic, the bench's
 * chains and corpora, and the tests' fuzzers, so that the same seed gives
 * the same traffic, chain or failure on every machine and every run
 * (Math.random cannot be seeded). mulberry32: 32 bits of state, fast, good
 * enough statistically for synthetic data, not for anything secret. Its
 * `next` and `pick` are the devnet's and fault suite's since their first
 * seeds, so a seed printed by an old failure still reproduces it.
 */
export type Random = {
  /** Uniform in [0, 1). */
  next(): number
  /** Uniform integer in [0, max). */
  int(max: number): number
  /** Uniform integer in [min, max]. */
  between(min: number, max: number): number
  /** Integer in [min, max] whose logarithm is uniform: many small values, a long tail of large ones. */
  logBetween(min: number, max: number): number
  chance(probability: number): boolean
  /** One of `items`, uniformly; throws on an empty list. */
  pick<T>(items: readonly T[]): T
  /** `bytes` random bytes as lower-case hex, without 0x. */
  hex(bytes: number): string
}

const HEX_BYTE: readonly string[] = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'))

export function createRandom(seed: number): Random {
  let state = seed >>> 0
  function nextUint32(): number {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (t ^ (t >>> 14)) >>> 0
  }
  const next = () => nextUint32() / 4294967296
  const int = (max: number) => Math.floor(next() * max)
  return {
    next,
    int,
    between: (min, max) => min + int(max - min + 1),
    logBetween: (min, max) => Math.min(max, Math.floor(Math.exp(Math.log(min) + next() * (Math.log(max + 1) - Math.log(min))))),
    chance: (probability) => next() < probability,
    pick(items) {
      if (items.length === 0) throw new Error('nothing to pick from')
      return items[int(items.length)]!
    },
    hex(bytes) {
      let out = ''
      for (let i = 0; i < bytes; i += 4) {
        const word = nextUint32()
        out += HEX_BYTE[word & 0xff]!
        if (i + 1 < bytes) out += HEX_BYTE[(word >>> 8) & 0xff]!
        if (i + 2 < bytes) out += HEX_BYTE[(word >>> 16) & 0xff]!
        if (i + 3 < bytes) out += HEX_BYTE[word >>> 24]!
      }
      return out
    },
  }
}
