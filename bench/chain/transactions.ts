import type { Address } from 'viem'
import { abiCall, erc20Call, fourByteCall, initCode } from '../lib/calldata.js'
import type { Random } from '../../devnet/random.js'
import { hash32, hexQuantity, quoted, scalar } from './json-fields.js'
import type { LogSpec } from './user-operations.js'

/**
 * Transactions of a generated chain: who sends them, the everyday mix of
 * what they carry, and their JSON exactly as `eth_getBlockByNumber(n, true)`
 * prints it (type 0 and type 2, signatures, fees, lower-case addresses).
 */

export type Actors = {
  senders: string[]
  nonces: Int32Array
  tokens: string[]
  routers: string[]
  bundlers: string[]
  bundlerNonces: Int32Array
  accounts: Address[]
  paymasters: Address[]
}

export function createActors(random: Random): Actors {
  const addresses = (count: number) => Array.from({ length: count }, () => `0x${random.hex(20)}`)
  return {
    senders: addresses(20_000),
    nonces: new Int32Array(20_000),
    tokens: addresses(200),
    routers: addresses(30),
    bundlers: addresses(8),
    bundlerNonces: new Int32Array(8),
    accounts: addresses(5_000) as Address[],
    paymasters: addresses(5) as Address[],
  }
}

export type Plain = { to: string | null; input: string; value: number; gas: number }

/** A transaction of the everyday mix: transfers, token calls, swaps, a few large payloads and deployments. */
export function plainTransaction(random: Random, actors: Actors): Plain {
  const roll = random.next()
  if (roll < 0.08) return { to: `0x${random.hex(20)}`, input: '', value: random.between(1e9, 9e15), gas: 21_000 }
  if (roll < 0.18) return { to: random.pick(actors.routers), input: fourByteCall(random), value: 0, gas: random.between(30_000, 120_000) }
  if (roll < 0.63) return { to: random.pick(actors.tokens), input: erc20Call(random), value: 0, gas: random.between(40_000, 90_000) }
  if (roll < 0.91) {
    return { to: random.pick(actors.routers), input: abiCall(random, random.between(200, 1000)), value: 0, gas: random.between(120_000, 500_000) }
  }
  if (roll < 0.997) {
    return { to: random.pick(actors.routers), input: abiCall(random, random.logBetween(1024, 10 * 1024)), value: 0, gas: random.between(200_000, 2_000_000) }
  }
  return { to: null, input: initCode(random, random.between(1024, 5 * 1024)), value: 0, gas: random.between(500_000, 3_000_000) }
}

export type TxContext = { chainId: number; blockHash: string; blockNumber: number; baseFee: number; index: number }

export type BuiltTransaction = {
  json: string
  hash: string
  from: string
  to: string | null
  type: number
  gas: number
  effectiveGasPrice: number
  /** The outcome its receipt shows: a status, and logs for a bundle. */
  outcome: { status: 0 | 1; logs: LogSpec[] }
  /** An indexer has reason to ask for its receipt by hash (a suffix, or a call to an EntryPoint): indexed for a fast lookup. */
  candidate: boolean
}

export function signedTransaction(
  random: Random,
  context: TxContext,
  fields: { from: string; nonce: number; to: string | null; input: string; value: number; gas: number },
): Omit<BuiltTransaction, 'outcome' | 'candidate'> {
  const hash = hash32(random)
  const legacy = random.chance(0.15)
  const priority = random.between(1_000, 2_000_000)
  const effectiveGasPrice = context.baseFee + priority
  const yParity = random.int(2)
  const common =
    `"blockHash":"${context.blockHash}","blockNumber":"${hexQuantity(context.blockNumber)}","from":"${fields.from}",` +
    `"gas":"${hexQuantity(fields.gas)}","gasPrice":"${hexQuantity(effectiveGasPrice)}",`
  const tail =
    `"hash":"${hash}","input":"0x${fields.input}","nonce":"${hexQuantity(fields.nonce)}","to":${quoted(fields.to)},` +
    `"transactionIndex":"${hexQuantity(context.index)}","value":"${hexQuantity(fields.value)}",`
  const signature = `"r":"${scalar(random)}","s":"${scalar(random)}"`
  const json = legacy
    ? `{${common}${tail}"type":"0x0","chainId":"${hexQuantity(context.chainId)}","v":"${hexQuantity(context.chainId * 2 + 35 + yParity)}",${signature}}`
    : `{${common}"maxFeePerGas":"${hexQuantity(context.baseFee * 2 + priority)}","maxPriorityFeePerGas":"${hexQuantity(priority)}",` +
      `${tail}"type":"0x2","accessList":[],"chainId":"${hexQuantity(context.chainId)}","v":"${hexQuantity(yParity)}",${signature},` +
      `"yParity":"${hexQuantity(yParity)}"}`
  return { json, hash, from: fields.from, to: fields.to, type: legacy ? 0 : 2, gas: fields.gas, effectiveGasPrice }
}
