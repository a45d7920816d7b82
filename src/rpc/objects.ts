import type { Address, Hex } from 'viem'

/** Whether two hashes are the same: nodes differ in the letter case of hex digits. */
export const sameHash = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/**
 * JSON-RPC objects as nodes send them (hex strings), with only the fields
 * the service reads. They are kept raw on purpose: formatting every
 * transaction of a block into bigint-rich objects costs more than finding
 * the few that matter.
 */
export type RawTransaction = {
  hash: Hex
  from: Address
  to: Address | null
  input: Hex
  transactionIndex: Hex | null
  blockNumber?: Hex | null
  blockHash?: Hex | null
}

export type RawLog = { address: Address; topics: Hex[]; data: Hex }
export type RawReceipt = { transactionHash: Hex; status: Hex; logs: RawLog[]; blockHash?: Hex | null; blockNumber?: Hex | null }

/** Which logs of a receipt are kept (receipt-read.ts): those of one of `addresses` whose topics are, position by position, in the set given there (all lowercase). */
export type LogFilter = { addresses: ReadonlySet<string>; topics: ReadonlyArray<ReadonlySet<string> | undefined> }
