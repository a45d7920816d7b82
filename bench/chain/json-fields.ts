import type { Random } from '../../devnet/random.js'

/** Field formatting shared by the generated blocks, transactions and receipts: what a geth-family node prints. */
export const hexQuantity = (value: number | bigint) => `0x${value.toString(16)}`
export const hash32 = (random: Random) => `0x${random.hex(32)}`
/** A signature scalar as nodes print it: a quantity, so without leading zeros. */
export const scalar = (random: Random) => `0x${random.hex(32).replace(/^0+(?=.)/, '')}`
export const quoted = (value: string | null) => (value === null ? 'null' : `"${value}"`)
