import { getAddress } from 'viem'
import { z } from 'zod'

const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/

/** A wallet address in any letter case (no checksum enforced), normalized to EIP-55. */
export const walletAddressSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(ADDRESS_PATTERN, 'must be 0x followed by 40 hexadecimal characters')
  .transform((value) => getAddress(value.toLowerCase()))

/** A 32-byte hash as 0x + 64 hex characters, lowercased. */
export const hashSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x followed by 64 hexadecimal characters')
  .transform((value) => value.toLowerCase() as `0x${string}`)
