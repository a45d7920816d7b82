/**
 * Seeded pseudo-random numbers, so that a corpus or a chain built from the
 * same parameters is the same byte for byte on every machine and every run
 * (Math.random cannot be seeded). sfc32 seeded through splitmix32: fast,
 * good enough statistically for synthetic data, not for anything secret.
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
  pick<T>(items: readonly T[]): T
  /** `bytes` random bytes as lower-case hex, without 0x. */
  hex(bytes: number): string
}

function splitmix32(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x9e3779b9) >>> 0
    let z = state
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0
    return (z ^ (z >>> 16)) >>> 0
  }
}

export const HEX_BYTE: readonly string[] = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'))

export function createRandom(seed: number): Random {
  const mix = splitmix32(seed)
  let a = mix()
  let b = mix()
  let c = mix()
  let d = mix()
  function nextUint32(): number {
    const t = (((a + b) >>> 0) + d) >>> 0
    d = (d + 1) >>> 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) >>> 0
    c = (c << 21) | (c >>> 11)
    c = (c + t) >>> 0
    return t
  }
  // discard the first outputs: sfc32 needs a few rounds to mix a seed
  for (let i = 0; i < 12; i++) nextUint32()

  const random: Random = {
    next: () => nextUint32() / 4294967296,
    int: (max) => Math.floor((nextUint32() / 4294967296) * max),
    between: (min, max) => min + random.int(max - min + 1),
    logBetween: (min, max) => Math.min(max, Math.floor(Math.exp(Math.log(min) + random.next() * (Math.log(max + 1) - Math.log(min))))),
    chance: (probability) => random.next() < probability,
    pick: (items) => items[random.int(items.length)]!,
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
  return random
}

/** Fisher–Yates in place, deterministic for a given Random. */
export function shuffle<T>(items: T[], random: Random): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = random.int(i + 1)
    const swap = items[i]!
    items[i] = items[j]!
    items[j] = swap
  }
  return items
}
