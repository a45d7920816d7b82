import * as OxAddress from 'ox/Address'
import * as Hash from 'ox/Hash'
import * as Hex from 'ox/Hex'
import type { Address } from 'viem'

// ox's modules, not viem's index: the registry is loaded by `attribution validate`, and viem's index
// is some 400 modules, most of a second of that command's start (bench/cli.bench.ts)

const CODE_SPACE = 36n ** 8n

/**
 * The `attempt`-th candidate builder code of a wallet: `bc_` + 8 base-36
 * characters of keccak256(address ‖ attempt). Attempt 0 is the code almost
 * every wallet gets; later attempts exist only to step past a collision, and
 * are just as deterministic.
 */
export function deriveBuilderCode(wallet: Address, attempt = 0): string {
  const digest = Hash.keccak256(Hex.concat(OxAddress.checksum(wallet), Hex.fromNumber(attempt, { size: 4 })))
  const value = BigInt(digest) % CODE_SPACE
  return `bc_${value.toString(36).padStart(8, '0')}`
}
