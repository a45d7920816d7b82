import type { Address } from 'viem'
import { entryPoint06Address, entryPoint07Address, entryPoint08Address } from 'viem/account-abstraction'

/**
 * The ERC-4337 EntryPoint versions the devnet deploys and the bench's chains
 * bundle for, at their canonical addresses (the same on every chain).
 */
export type EntryPointVersion = '0.6' | '0.7' | '0.8'
export const entryPointVersions: readonly EntryPointVersion[] = ['0.6', '0.7', '0.8']

export const entryPointAddresses: Readonly<Record<EntryPointVersion, Address>> = {
  '0.6': entryPoint06Address,
  '0.7': entryPoint07Address,
  '0.8': entryPoint08Address,
}
