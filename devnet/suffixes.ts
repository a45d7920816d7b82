import { Attribution } from 'ox/erc8021'
import { hexToBytes, type Address, type Hex } from 'viem'

/**
 * The suffixes the traffic generator attaches, and what each one attributes.
 * What a suffix attributes is worked out here from the attribution it was
 * built from, never by decoding it: the ledger must not share a decoder with
 * the indexer it checks.
 */

const MARKER = '80218021802180218021802180218021'

export type PlannedSuffix =
  | { kind: 'attributed'; hex: Hex; schemaId: 0 | 1 | 2; /** Distinct codes, in suffix order. */ codes: string[] }
  | { kind: 'malformed'; hex: Hex; reason: MalformedReason }

export type MalformedReason = 'length-before-start' | 'unknown-schema' | 'bad-cbor'

/** Codes that follow the registry rule (1-32 of 0-9a-z_). None holds a comma: schema 0/1 separate codes with commas. */
export const VALID_CODES = ['baseapp', 'morpho', 'uniswap', 'aave_v3', 'zora', 'farcaster', 'privy', 'relay', 'solver_9', 'coinbase_wallet', 'devnet'] as const

/** Codes outside the registry rule: the indexer records them, flagged invalid. */
export const INVALID_CODES = ['Bad-Code', 'UPPERCASE', 'has space', 'x'.repeat(33)] as const

/** EIP-2028 calldata gas of the bytes: 16 per non-zero byte, 4 per zero byte. */
export function suffixGasOf(hex: Hex): number {
  return hexToBytes(hex).reduce((gas, byte) => gas + (byte === 0 ? 4 : 16), 0)
}

function attributed(attribution: Attribution.Attribution, schemaId: 0 | 1 | 2, codes: string[]): PlannedSuffix {
  return { kind: 'attributed', hex: Attribution.toDataSuffix(attribution), schemaId, codes: [...new Set(codes)] }
}

export function schema0(codes: string[]): PlannedSuffix {
  return attributed({ codes }, 0, codes)
}

export function schema1(codes: string[], codeRegistry: { address: Address; chainId: number }): PlannedSuffix {
  return attributed({ codes, codeRegistry }, 1, codes)
}

/** Schema 2 attributes its app code, its wallet code and each service code. */
export function schema2(fields: { appCode?: string; walletCode?: string; serviceCodes?: string[]; metadata?: Record<string, unknown> }): PlannedSuffix {
  const codes = [fields.appCode, fields.walletCode, ...(fields.serviceCodes ?? [])].filter((code): code is string => code !== undefined)
  return attributed(fields, 2, codes)
}

/**
 * Suffixes that carry the marker but cannot be read. Each stays malformed
 * whatever calldata precedes it, except `length-before-start`, which needs to
 * be (nearly) the whole calldata: its length byte claims 255 code bytes.
 */
export function malformed(reason: MalformedReason): PlannedSuffix {
  const body = {
    'length-before-start': '6162ff00', // codes "ab", length byte 0xff, schema 0
    'unknown-schema': '61016307', // codes "a", length 1, schema id 7
    'bad-cbor': 'ff000102', // CBOR 0xff (a lone break), length 1, schema 2
  }[reason]
  return { kind: 'malformed', hex: `0x${body}${MARKER}`, reason }
}

/** Calldata that ends one byte short of the marker: looks attributed to a sloppy check, and is not. */
export const NEAR_MISS_MARKER: Hex = `0x${'ab'.repeat(8)}${MARKER.slice(0, -2)}22`
