import { setImmediate } from 'node:timers/promises'
// ox's Address module, not viem's index (hundreds of modules): the CLI parses a hash before it loads anything else
import * as OxAddress from 'ox/Address'
import type { Address } from 'viem'
import { z } from 'zod'

const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/

/** A wallet address in any letter case (no checksum enforced), normalized to EIP-55. */
export const walletAddressSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(ADDRESS_PATTERN, 'must be 0x followed by 40 hexadecimal characters')
  .transform((value) => OxAddress.checksum(value.toLowerCase()))

/**
 * A wallet address in any letter case, lowercased but not yet checksummed:
 * for lists, whose EIP-55 checksums (a keccak each) are computed by
 * checksumAddresses in slices between which other requests get their turn.
 */
export const walletAddressFormatSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(ADDRESS_PATTERN, 'must be 0x followed by 40 hexadecimal characters')
  .transform((value) => value.toLowerCase())

const CHECKSUMS_PER_SLICE = 100

/** EIP-55 forms of lowercase addresses, yielding to the event loop every 100 (1,000 checksums are tens of ms). */
export async function checksumAddresses(addresses: readonly string[]): Promise<Address[]> {
  const out: Address[] = []
  for (let start = 0; start < addresses.length; start += CHECKSUMS_PER_SLICE) {
    if (start > 0) await setImmediate()
    for (const address of addresses.slice(start, start + CHECKSUMS_PER_SLICE)) out.push(OxAddress.checksum(address))
  }
  return out
}

/** A 32-byte hash as 0x + 64 hex characters, lowercased. */
export const hashSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x followed by 64 hexadecimal characters')
  .transform((value) => value.toLowerCase() as `0x${string}`)

const REGISTRY_PATTERN = /^(canonical|([1-9]\d{0,9}):(0x[0-9a-fA-F]{40}))$/

/**
 * A registry namespace as the API names it: `canonical` (this service's
 * registry), or `<chainId>:<address>` of a custom registry, the address in
 * any letter case. Parsed to the stored spelling (the address lowercased),
 * which is what the aggregates and attribution rows are keyed by.
 */
export const registryParamSchema = z
  .string({ error: 'must be a string' })
  .regex(REGISTRY_PATTERN, 'must be canonical or <chainId>:<0x address of 40 hexadecimal characters>')
  .transform((value) => value.toLowerCase())

/** A stored registry namespace as answers spell it: `canonical`, or `<chainId>:<EIP-55 address>`. */
export function registryLabel(stored: string): string {
  const match = /^(\d+):(0x[0-9a-fA-F]{40})$/.exec(stored)
  return match ? `${match[1]}:${eip55(match[2]!)}` : stored
}

/** The stored registry namespace split into the attribution rows' columns (null address: the canonical one). */
export function registryColumns(stored: string): { chainId: number; address: string } | null {
  const match = /^(\d+):(0x[0-9a-f]{40})$/.exec(stored)
  return match ? { chainId: Number(match[1]), address: match[2]! } : null
}

/**
 * A stored address as answers spell it: EIP-55. Anything that is not an
 * address of 40 hexadecimal digits is passed as stored, so one odd row can
 * never turn a whole page into a 500.
 */
export function eip55(stored: string): string {
  return ADDRESS_PATTERN.test(stored) ? OxAddress.checksum(stored.toLowerCase()) : stored
}
