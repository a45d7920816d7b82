import { concat, getAddress, hexToBigInt, keccak256, numberToHex, type Address } from 'viem'

const CODE_SPACE = 36n ** 8n

/**
 * The `attempt`-th candidate builder code of a wallet: `bc_` + 8 base-36
 * characters of keccak256(address ‖ attempt). Attempt 0 is the code almost
 * every wallet gets; later attempts exist only to step past a collision, and
 * are just as deterministic.
 */
export function deriveBuilderCode(wallet: Address, attempt = 0): string {
  const digest = keccak256(concat([getAddress(wallet), numberToHex(attempt, { size: 4 })]))
  const value = hexToBigInt(digest) % CODE_SPACE
  return `bc_${value.toString(36).padStart(8, '0')}`
}
