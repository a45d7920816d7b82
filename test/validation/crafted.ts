import { Attribution } from 'ox/erc8021'
import type { Address, Hex } from 'viem'
import { sendDevnetTransaction, transferGas } from '../../devnet/send.js'
import { sendBundle, signUserOperation, type SignedUserOperation } from '../../devnet/userops.js'
import type { TestChain } from '../support/chain.js'

export const CUSTOM_REGISTRY: Address = '0x000000000000000000000000000000000000C0De'
const RECIPIENT: Address = '0x000000000000000000000000000000000000bEEF'
const MARKER = '80218021802180218021802180218021'
/** Codes "a", length 1, schema id 7: carries the marker, names a schema that does not exist. */
export const UNKNOWN_SCHEMA_SUFFIX: Hex = `0x61016307${MARKER}`

export type Crafted = {
  /** Schema 2 with app, wallet (custom registry) and service codes, one of them invalid. */
  schema2Tx: Hex
  schema2Suffix: Hex
  /** Schema 1: every code belongs to CUSTOM_REGISTRY on chain 8453. */
  schema1Tx: Hex
  schema1Suffix: Hex
  /** One EntryPoint 0.7 bundle holding the four operations below, in this order. */
  bundle: Hex
  plainOp: SignedUserOperation
  malformedOp: SignedUserOperation
  multiCodeOp: SignedUserOperation
  multiCodeSuffix: Hex
  /** Its inner call reverts: the bundle succeeds, its UserOperationEvent says success = false. */
  revertedOp: SignedUserOperation
  revertedSuffix: Hex
}

/**
 * A handful of transactions and operations whose every field the tests
 * know exactly, sent after the generated traffic (so the generator's nonces
 * and account states are current and nothing else sends afterwards).
 */
export async function sendCraftedTraffic(chain: TestChain, registeredCode: string): Promise<Crafted> {
  const { client, wallets, contracts } = chain
  const schema2Suffix = Attribution.toDataSuffix({
    appCode: registeredCode,
    walletCode: 'privy',
    serviceCodes: ['relay', 'Bad-Code'],
    registries: { wallet: { address: CUSTOM_REGISTRY, chainId: 8453 } },
  })
  const schema1Suffix = Attribution.toDataSuffix({ codes: [registeredCode, 'morpho'], codeRegistry: { address: CUSTOM_REGISTRY, chainId: 8453 } })
  const multiCodeSuffix = Attribution.toDataSuffix({ codes: [registeredCode, 'zora', 'aave_v3'] })
  const revertedSuffix = Attribution.toDataSuffix({ codes: ['morpho'] })

  const send = (dataSuffix: Hex) =>
    sendDevnetTransaction(client, { from: wallets.deployer, to: RECIPIENT, data: '0x12345678', gas: transferGas(300), dataSuffix })
  const schema2Tx = await send(schema2Suffix)
  const schema1Tx = await send(schema1Suffix)

  const [plain, malformed, multi, reverting] = chain.traffic.smartAccounts.filter((account) => account.version === '0.7')
  const sign = (account: typeof plain, to: Address, suffix?: Hex) =>
    signUserOperation({ chainId: chain.chainId, account: account!, call: { to, data: '0x' }, suffix })
  const plainOp = await sign(plain, RECIPIENT)
  const malformedOp = await sign(malformed, RECIPIENT, UNKNOWN_SCHEMA_SUFFIX)
  const multiCodeOp = await sign(multi, RECIPIENT, multiCodeSuffix)
  const revertedOp = await sign(reverting, contracts.reverter, revertedSuffix)
  const bundle = await sendBundle(client, { bundler: wallets.bundler, operations: [plainOp, malformedOp, multiCodeOp, revertedOp] })

  for (const hash of [schema2Tx, schema1Tx, bundle]) {
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    if (receipt.status !== 'success') throw new Error(`crafted transaction ${hash} failed`)
  }
  return { schema2Tx, schema2Suffix, schema1Tx, schema1Suffix, bundle, plainOp, malformedOp, multiCodeOp, multiCodeSuffix, revertedOp, revertedSuffix }
}
