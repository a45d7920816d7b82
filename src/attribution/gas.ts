/** EIP-2028 calldata cost of a non-zero byte and of a zero byte. */
export const GAS_PER_NONZERO_BYTE = 16
export const GAS_PER_ZERO_BYTE = 4

/** Calldata gas of a 0x-prefixed hex string, per EIP-2028. */
export function calldataGas(hex: string): number {
  let gas = 0
  for (let i = 2; i + 1 < hex.length; i += 2) {
    const isZero = hex.charCodeAt(i) === 48 && hex.charCodeAt(i + 1) === 48
    gas += isZero ? GAS_PER_ZERO_BYTE : GAS_PER_NONZERO_BYTE
  }
  return gas
}
