import { hexToBytes, keccak256 } from 'viem'

/** A 2048-bit logs bloom (yellow paper §4.3.1), filled by address and topics of each log. */
export function createBloom(): Uint8Array {
  return new Uint8Array(256)
}

export function addToBloom(bloom: Uint8Array, hex: string): void {
  const hash = keccak256(hexToBytes(hex as `0x${string}`), 'bytes')
  for (let i = 0; i < 6; i += 2) {
    const bit = ((hash[i]! << 8) | hash[i + 1]!) & 2047
    bloom[255 - (bit >> 3)]! |= 1 << (bit & 7)
  }
}

export function addLogToBloom(bloom: Uint8Array, log: { address: string; topics: readonly string[] }): void {
  addToBloom(bloom, log.address)
  for (const topic of log.topics) addToBloom(bloom, topic)
}

export function mergeBloom(into: Uint8Array, from: Uint8Array): void {
  for (let i = 0; i < 256; i++) into[i]! |= from[i]!
}

export function bloomHex(bloom: Uint8Array): string {
  return `0x${Buffer.from(bloom).toString('hex')}`
}
