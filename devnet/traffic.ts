import { concat, encodeAbiParameters, getAddress, keccak256, stringToHex, type Address, type Hex, type TransactionReceipt } from 'viem'
import type { Logger } from '../src/logger.js'
import { deriveBuilderCode } from '../src/registry/derive.js'
import type { DevnetClient } from './client.js'
import type { DevnetContracts } from './contracts.js'
import type { EntryPointVersion } from './entry-points.js'
import { appendTruth, copyTruth, createTruthSummary, emptyTruth, type ExpectedAttribution, type GroundTruth } from './ledger.js'
import { sendDevnetTransaction, transferGas, type DevnetWallets, type Sender } from './send.js'
import { createRandom } from './random.js'
import {
  INVALID_CODES,
  malformed,
  NEAR_MISS_MARKER,
  schema0,
  schema1,
  schema2,
  suffixGasOf,
  VALID_CODES,
  type MalformedReason,
  type PlannedSuffix,
} from './suffixes.js'
import {
  createSmartAccounts,
  operationCallData,
  resyncSmartAccount,
  sendBundle,
  signUserOperation,
  userOperationOutcomes,
  type SignedUserOperation,
  type SmartAccount,
} from './userops.js'

export { totalsByCode, type CodeTotals, type ExpectedAttribution, type GroundTruth } from './ledger.js'

export type TrafficKind =
  /** No suffix: a value transfer, an ERC-20-like call, or calldata one byte short of the marker. */
  | 'plain'
  | 'schema0'
  /** Several codes, one of them twice (it counts once). */
  | 'schema0-multi'
  | 'schema1'
  /** App, wallet and service codes in the variants schema 2 allows. */
  | 'schema2'
  /** Codes outside the registry rule, such as `Bad-Code`. */
  | 'invalid-code'
  /** `bc_xxxxxxxx` builder codes from the registered list. */
  | 'registered-code'
  | 'malformed-length'
  | 'malformed-schema'
  | 'malformed-cbor'
  /** An attributed call to a contract that always reverts, mined with status 0. */
  | 'reverted'
  /** A handleOps bundle: attributed and unattributed operations, some reverting, some malformed. */
  | 'bundle-0.6'
  | 'bundle-0.7'
  | 'bundle-0.8'

/** Every kind at least once per 18 transactions, plain ones the most common. */
export const defaultTrafficMix: readonly TrafficKind[] = [
  'plain',
  'schema0',
  'bundle-0.6',
  'schema2',
  'plain',
  'schema0-multi',
  'bundle-0.7',
  'schema1',
  'invalid-code',
  'plain',
  'registered-code',
  'bundle-0.8',
  'malformed-length',
  'reverted',
  'plain',
  'malformed-schema',
  'schema2',
  'malformed-cbor',
]

export type TrafficGeneratorOptions = {
  client: DevnetClient
  chainId: number
  contracts: DevnetContracts
  wallets: DevnetWallets
  /** Builder codes for `registered-code` traffic. Default: the codes the traffic wallets get when registered. */
  registeredCodes?: string[]
  mix?: readonly TrafficKind[]
  seed?: number
  /** SimpleAccounts per EntryPoint version; a bundle holds at most this many operations. */
  accountsPerEntryPoint?: number
}

export type TrafficRunOptions = {
  transactions: number
  /** Blocks to spread them over; each gets a share, and a block is mined after each share. */
  blocks: number
  registeredCodes?: string[]
}

export type TrafficLoopOptions = {
  logger: Logger
  transactionsPerBlock?: number
  /** How long to wait for a batch to be mined before giving up on it. */
  receiptTimeoutMs?: number
  /** How long `stop()` waits for the batch in flight to be mined. */
  stopGraceMs?: number
  /** One info line per this long (default 30 s), the first right after the first batch; each batch is a debug line. */
  summaryEveryMs?: number
}

/** The devnet mines a batch every block (2 s): one line each would drown everything else at info. */
export const TRAFFIC_SUMMARY_EVERY_MS = 30_000

export type TrafficLoop = {
  /** Lets the batch in flight be mined and recorded, then ends the loop. */
  stop(): Promise<void>
}

export type TrafficGenerator = {
  /**
   * Sends `transactions` over `blocks` blocks (mining them itself, automine
   * off meanwhile) and returns what this run mined.
   */
  run(options: TrafficRunOptions): Promise<GroundTruth>
  /** Sends a batch every block until stopped, logging each batch. */
  startLoop(options: TrafficLoopOptions): TrafficLoop
  /** Everything mined so far by this generator (after an `evm_revert`, still including what the revert orphaned). */
  truth(): GroundTruth
  /** Re-reads every nonce and account deployment from the chain: needed after `evm_revert` or an outage. */
  resync(): Promise<void>
  smartAccounts: readonly SmartAccount[]
  registeredCodes: readonly string[]
}

export class GroundTruthMismatchError extends Error {
  override name = 'GroundTruthMismatchError'
}

type PlannedOperation = { operation: SignedUserOperation; suffix: PlannedSuffix | undefined }

/** A transaction ready to go: nonces reserved and operations signed, so sending needs no more decisions. */
type Planned = {
  kind: TrafficKind
  suffix: PlannedSuffix | undefined
  operations: PlannedOperation[] | undefined
  bundleVersion: EntryPointVersion | undefined
  send(): Promise<Hex>
}

type Sent = Omit<Planned, 'send'> & { hash: Hex }

const CUSTOM_REGISTRY: Address = '0x00000000000000000000000000000000000c0dE5'

/** Recipients of transfers: fixed addresses without code, so every call to them succeeds. */
const RECIPIENTS: Address[] = Array.from({ length: 8 }, (_, index) =>
  getAddress(`0x${keccak256(stringToHex(`erc8021-devnet-recipient:${index}`)).slice(-40)}`),
)

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export async function createTrafficGenerator(options: TrafficGeneratorOptions): Promise<TrafficGenerator> {
  const { client, chainId, contracts, wallets } = options
  const mix = options.mix ?? defaultTrafficMix
  if (mix.length === 0) throw new Error('the traffic mix is empty')
  if (wallets.traffic.length === 0) throw new Error('no traffic wallets')
  const random = createRandom(options.seed ?? 8021)
  const defaultRegistered = options.registeredCodes ?? wallets.traffic.map((sender) => deriveBuilderCode(sender.address))
  const smartAccounts = await createSmartAccounts({
    client,
    contracts,
    funder: wallets.deployer,
    perEntryPoint: options.accountsPerEntryPoint ?? 4,
  })
  const ledger = emptyTruth()
  const counters = new Map<string, number>()
  /** How many times `key` came up before: rotates variants deterministically. */
  const turn = (key: string) => {
    const value = counters.get(key) ?? 0
    counters.set(key, value + 1)
    return value
  }
  let kindIndex = 0
  const nextKind = () => mix[kindIndex++ % mix.length]!

  function nextTrafficSender(): Sender {
    return wallets.traffic[turn('sender') % wallets.traffic.length]!
  }

  function codesFor(registered: readonly string[]) {
    const valid = () => random.pick(VALID_CODES)
    const twoDistinct = (): [string, string] => {
      const first = valid()
      let second = valid()
      while (second === first) second = valid()
      return [first, second]
    }
    return {
      schema0: () => schema0([valid()]),
      schema0Multi: () => {
        const [a, b] = twoDistinct()
        return schema0([a, b, a])
      },
      schema1: () => schema1(turn('schema1') % 2 === 0 ? [valid()] : twoDistinct(), { address: CUSTOM_REGISTRY, chainId }),
      schema2: () => {
        const [app, wallet] = twoDistinct()
        switch (turn('schema2') % 4) {
          case 0:
            return schema2({ appCode: app })
          case 1:
            return schema2({ appCode: app, walletCode: wallet })
          case 2:
            return schema2({ appCode: app, walletCode: wallet, serviceCodes: ['relay', 'solver_9'], metadata: { source: 'devnet' } })
          default:
            return schema2({ appCode: app, walletCode: app })
        }
      },
      invalid: () => {
        switch (turn('invalid') % 3) {
          case 0:
            return schema0(['Bad-Code'])
          case 1:
            return schema0([random.pick(INVALID_CODES), valid()])
          default:
            return schema2({ appCode: 'Bad-Code', walletCode: valid() })
        }
      },
      registered: () => {
        if (registered.length === 0) return schema0([valid()])
        return turn('registered') % 2 === 0 ? schema0([random.pick(registered)]) : schema2({ appCode: random.pick(registered), walletCode: valid() })
      },
    }
  }

  function transferPrefix(): Hex {
    // half the attributed transactions carry a call before the suffix, half are the suffix alone
    if (turn('prefix') % 2 === 0) return '0x'
    return concat(['0xa9059cbb', encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [random.pick(RECIPIENTS), 1000n])])
  }

  function planTransaction(kind: TrafficKind, suffix: PlannedSuffix | undefined, data: Hex, to: Address, gas?: bigint): Planned {
    const from = nextTrafficSender()
    const bytes = (data.length - 2) / 2 + (suffix ? (suffix.hex.length - 2) / 2 : 0)
    return {
      kind,
      suffix,
      operations: undefined,
      bundleVersion: undefined,
      send: () => sendDevnetTransaction(client, { from, to, data, value: 1n, gas: gas ?? transferGas(bytes), dataSuffix: suffix?.hex }),
    }
  }

  function planPlain(): Planned {
    const to = random.pick(RECIPIENTS)
    switch (turn('plain') % 3) {
      case 0:
        return planTransaction('plain', undefined, '0x', to)
      case 1:
        return planTransaction('plain', undefined, concat(['0xa9059cbb', encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [to, 5n])]), to)
      default:
        return planTransaction('plain', undefined, NEAR_MISS_MARKER, to)
    }
  }

  async function planBundle(version: EntryPointVersion, codes: ReturnType<typeof codesFor>): Promise<Planned> {
    const accounts = smartAccounts.filter((account) => account.version === version)
    const round = turn(`bundle-${version}`)
    const attributions = [codes.schema0, codes.schema2, codes.schema1, codes.invalid, codes.registered, codes.schema0Multi]
    const shapes: Array<{ suffix: PlannedSuffix | undefined; reverts: boolean }> = [
      { suffix: attributions[round % attributions.length]!(), reverts: false },
      { suffix: undefined, reverts: false },
    ]
    if (round % 2 === 0) shapes.push({ suffix: codes.schema0(), reverts: true })
    if (round % 3 === 1) shapes.push({ suffix: malformed(round % 2 === 0 ? 'unknown-schema' : 'bad-cbor'), reverts: false })
    const operations: PlannedOperation[] = []
    for (const [index, shape] of shapes.slice(0, accounts.length).entries()) {
      const account = accounts[(round + index) % accounts.length]!
      const call = shape.reverts ? { to: contracts.reverter } : { to: random.pick(RECIPIENTS), value: 1n }
      const operation = await signUserOperation({ chainId, account, call, suffix: shape.suffix?.hex })
      operations.push({ operation, suffix: shape.suffix })
    }
    return {
      kind: `bundle-${version}`,
      suffix: undefined,
      operations,
      bundleVersion: version,
      send: () => sendBundle(client, { bundler: wallets.bundler, operations: operations.map((planned) => planned.operation) }),
    }
  }

  async function plan(kind: TrafficKind, registered: readonly string[]): Promise<Planned> {
    const codes = codesFor(registered)
    const to = random.pick(RECIPIENTS)
    const malformedTransaction = (reason: MalformedReason) => planTransaction(kind, malformed(reason), '0x', to)
    switch (kind) {
      case 'plain':
        return planPlain()
      case 'schema0':
        return planTransaction(kind, codes.schema0(), transferPrefix(), to)
      case 'schema0-multi':
        return planTransaction(kind, codes.schema0Multi(), transferPrefix(), to)
      case 'schema1':
        return planTransaction(kind, codes.schema1(), transferPrefix(), to)
      case 'schema2':
        return planTransaction(kind, codes.schema2(), transferPrefix(), to)
      case 'invalid-code':
        return planTransaction(kind, codes.invalid(), transferPrefix(), to)
      case 'registered-code':
        return planTransaction(kind, codes.registered(), transferPrefix(), to)
      case 'malformed-length':
        // the suffix must be the whole calldata for its length byte to point before the start
        return malformedTransaction('length-before-start')
      case 'malformed-schema':
        return malformedTransaction('unknown-schema')
      case 'malformed-cbor':
        return malformedTransaction('bad-cbor')
      case 'reverted':
        // explicit gas: an estimate would fail on the revert and the transaction would never be sent
        return planTransaction(kind, turn('reverted') % 2 === 0 ? codes.schema0() : codes.schema2(), '0x', contracts.reverter, 100_000n)
      case 'bundle-0.6':
      case 'bundle-0.7':
      case 'bundle-0.8':
        return planBundle(kind.slice('bundle-'.length) as EntryPointVersion, codes)
    }
  }

  /** Plans `count` transactions in order (nonces and signatures), then sends them together: one JSON-RPC batch. */
  async function sendBatch(count: number, registered: readonly string[]): Promise<Sent[]> {
    const planned: Planned[] = []
    for (let index = 0; index < count; index++) planned.push(await plan(nextKind(), registered))
    const hashes = await Promise.all(planned.map((item) => item.send()))
    return planned.map(({ send: _send, ...item }, index) => ({ ...item, hash: hashes[index]! }))
  }

  async function resync() {
    const senders = [wallets.deployer, wallets.bundler, ...wallets.traffic]
    await Promise.all([...senders.map((sender) => sender.resync()), ...smartAccounts.map((account) => resyncSmartAccount(client, account))])
  }

  /** Turns mined transactions into ledger rows, from their receipts, mined input and UserOperationEvents. */
  async function record(sent: Sent[], receipts: TransactionReceipt[]): Promise<GroundTruth> {
    const mined = await Promise.all(sent.map((item) => client.getTransaction({ hash: item.hash })))
    const truth = emptyTruth()
    for (const [index, item] of sent.entries()) {
      const receipt = receipts[index]!
      const input = mined[index]!.input
      const base = { chainId, blockNumber: Number(receipt.blockNumber), txHash: item.hash }
      let attributesSomething = false
      if (item.suffix) {
        if (!input.toLowerCase().endsWith(item.suffix.hex.slice(2).toLowerCase())) {
          throw new GroundTruthMismatchError(`transaction ${item.hash} was mined without the suffix it was sent with`)
        }
        attributesSomething = true
        addSuffixRows(truth, item.suffix, { ...base, kind: 'transaction', userOpIndex: -1, status: receipt.status === 'success' ? 'success' : 'reverted' })
      }
      if (item.operations && item.bundleVersion) {
        const entryPoint = contracts.entryPoints[item.bundleVersion].address
        if (receipt.status !== 'success') throw new GroundTruthMismatchError(`bundle ${item.hash} reverted: none of its operations ran`)
        const callData = operationCallData(item.bundleVersion, input)
        const outcomes = userOperationOutcomes(receipt.logs, entryPoint)
        for (const [userOpIndex, { operation, suffix }] of item.operations.entries()) {
          const outcome = outcomes.find((event) => event.sender.toLowerCase() === operation.sender.toLowerCase() && event.nonce === operation.nonce)
          if (!outcome) throw new GroundTruthMismatchError(`bundle ${item.hash} has no UserOperationEvent for operation ${userOpIndex}`)
          if (outcome.userOpHash !== operation.hash) {
            throw new GroundTruthMismatchError(`operation ${userOpIndex} of ${item.hash}: event hash ${outcome.userOpHash}, computed ${operation.hash}`)
          }
          if (callData[userOpIndex]?.toLowerCase() !== operation.callData.toLowerCase()) {
            throw new GroundTruthMismatchError(`operation ${userOpIndex} of ${item.hash} was mined with other callData`)
          }
          if (!suffix) continue
          attributesSomething = true
          addSuffixRows(truth, suffix, {
            ...base,
            kind: 'userOperation',
            userOpIndex,
            userOpHash: outcome.userOpHash,
            status: outcome.success ? 'success' : 'reverted',
          })
        }
      }
      if (!attributesSomething) truth.unattributedTxHashes.push(item.hash)
    }
    // send order within a block is not mining order across senders; block order is what consumers need
    truth.attributions.sort((a, b) => a.blockNumber - b.blockNumber)
    return truth
  }

  async function run({ transactions, blocks, registeredCodes }: TrafficRunOptions): Promise<GroundTruth> {
    if (!Number.isInteger(transactions) || transactions < 0) throw new Error('transactions must be a whole number >= 0')
    if (!Number.isInteger(blocks) || blocks < 1) throw new Error('blocks must be a whole number >= 1')
    const registered = registeredCodes ?? defaultRegistered
    const automine = await client.getAutomine()
    if (automine) await client.setAutomine(false)
    const sent: Sent[] = []
    try {
      for (let block = 0; block < blocks; block++) {
        const share = Math.floor(transactions / blocks) + (block < transactions % blocks ? 1 : 0)
        sent.push(...(await sendBatch(share, registered)))
        await client.mine({ blocks: 1 })
      }
    } catch (error) {
      await resync()
      throw error
    } finally {
      if (automine) await client.setAutomine(true)
    }
    const receipts = await Promise.all(sent.map((item) => client.getTransactionReceipt({ hash: item.hash })))
    const truth = await record(sent, receipts)
    appendTruth(ledger, truth)
    return copyTruth(truth)
  }

  async function receiptsOf(sent: Sent[], deadline: () => number): Promise<TransactionReceipt[]> {
    const receipts: Array<TransactionReceipt | undefined> = new Array(sent.length)
    for (;;) {
      await Promise.all(
        sent.map(async (item, index) => {
          if (receipts[index]) return
          receipts[index] = await client.getTransactionReceipt({ hash: item.hash }).catch(() => undefined)
        }),
      )
      if (receipts.every((receipt) => receipt !== undefined)) return receipts as TransactionReceipt[]
      if (Date.now() > deadline()) throw new Error(`${receipts.filter((r) => !r).length} of ${sent.length} transactions not mined in time`)
      await sleep(100)
    }
  }

  /** Hashes to try `attribution validate` (and the API's validate) on: an attributed transaction and UserOperation of this batch. */
  function samplesOf(batch: GroundTruth) {
    const succeeded = batch.attributions.filter((row) => row.status === 'success')
    const transaction = succeeded.find((row) => row.kind === 'transaction')
    const operation = succeeded.find((row) => row.kind === 'userOperation')
    return {
      ...(transaction && { sample_tx_hash: transaction.txHash }),
      ...(operation && { sample_user_op_hash: operation.userOpHash }),
    }
  }

  function startLoop({
    logger,
    transactionsPerBlock = 4,
    receiptTimeoutMs = 30_000,
    stopGraceMs = 5_000,
    summaryEveryMs = TRAFFIC_SUMMARY_EVERY_MS,
  }: TrafficLoopOptions): TrafficLoop {
    let running = true
    /** Once stopping, the batch in flight gets a short grace to be mined, not the full receipt timeout. */
    let stopDeadline = Infinity
    const summary = createTruthSummary()
    let sentTotal = 0
    let summarizedAt = -Infinity
    let batchesSince = 0
    let sentSince: Sent[] = []
    const loop = (async () => {
      while (running) {
        try {
          const sent = await sendBatch(transactionsPerBlock, defaultRegistered)
          const batchDeadline = Date.now() + receiptTimeoutMs
          const receipts = await receiptsOf(sent, () => Math.min(batchDeadline, stopDeadline))
          const truth = await record(sent, receipts)
          appendTruth(ledger, truth)
          summary.add(truth)
          sentTotal += sent.length
          const lastBlock = receipts.reduce((max, receipt) => (receipt.blockNumber > max ? receipt.blockNumber : max), 0n)
          const totals = { transactions: sentTotal, ...summary.summary }
          logger.debug({ chain_id: chainId, block: Number(lastBlock), sent: countKinds(sent), ...samplesOf(truth), truth: totals }, 'devnet traffic mined')
          batchesSince++
          sentSince = sentSince.concat(sent)
          if (Date.now() - summarizedAt >= summaryEveryMs) {
            logger.info(
              { chain_id: chainId, block: Number(lastBlock), every_s: summaryEveryMs / 1000, batches: batchesSince, sent: countKinds(sentSince), ...samplesOf(truth), truth: totals },
              'devnet traffic summary',
            )
            summarizedAt = Date.now()
            batchesSince = 0
            sentSince = []
          }
          // no wait for the next block: this batch's receipts exist, so its block is mined and the next batch lands in a later one
        } catch (error) {
          if (!running) {
            // expected when stopping: the batch in flight was not mined within the grace
            logger.info({ chain_id: chainId, reason: (error as Error).message.split('\n')[0] }, 'devnet traffic stopped before its last batch was recorded; that batch is not in the ground truth')
            break
          }
          logger.warn({ err: error, chain_id: chainId }, 'devnet traffic batch failed; re-reading nonces and retrying')
          await sleep(1_000)
          await resync().catch(() => {})
        }
      }
    })()
    return {
      async stop() {
        running = false
        stopDeadline = Date.now() + stopGraceMs
        await loop
      },
    }
  }

  return {
    run,
    startLoop,
    truth: () => copyTruth(ledger),
    resync,
    smartAccounts,
    registeredCodes: defaultRegistered,
  }
}

function addSuffixRows(
  truth: GroundTruth,
  suffix: PlannedSuffix,
  row: Omit<ExpectedAttribution, 'code' | 'schemaId' | 'suffixGas'>,
) {
  if (suffix.kind === 'malformed') {
    truth.malformed.push({ txHash: row.txHash, userOpIndex: row.userOpIndex })
    return
  }
  const suffixGas = suffixGasOf(suffix.hex)
  for (const code of suffix.codes) truth.attributions.push({ ...row, code, schemaId: suffix.schemaId, suffixGas })
}

function countKinds(sent: Sent[]): Partial<Record<TrafficKind, number>> {
  const counts: Partial<Record<TrafficKind, number>> = {}
  for (const item of sent) counts[item.kind] = (counts[item.kind] ?? 0) + 1
  return counts
}
