import type { Address, Hex } from 'viem'
import type { TransactionFilter } from '../rpc/scan/block-scan.js'
import type { LogFilter, RawReceipt, RawTransaction } from '../rpc/objects.js'
import { decodeAttribution, type Attributed, type Malformed } from './decode.js'
import { detached } from './detached.js'
import { ATTRIBUTION_LIMITS } from './limits.js'
import { hasMarker, MARKER_HEX } from './marker.js'
import {
  extractUserOperations,
  isBundle,
  mayCarryAttributedOps,
  outcomeOf,
  USER_OPERATION_EVENT_TOPIC,
  userOperationOutcomes,
  type BundledUserOperation,
} from './userops.js'

/**
 * From raw JSON-RPC transactions (rpc/objects.ts) to attribution records.
 * The indexer and the validation endpoint both go through here, so a hash
 * validated over RPC reports exactly what the index would have stored.
 */

export type BlockContext = { number: number; hash: Hex; timestamp: number }

/** What later stages read of a UserOperation: which one it is, not its calldata. */
type OpIdentity = Pick<BundledUserOperation, 'index' | 'sender' | 'nonce'>
type AttributedOp = { op: OpIdentity; result: Attributed }
type MalformedOp = { op: OpIdentity; result: Malformed }

/**
 * A transaction whose calldata (or one of whose UserOperations) carries the
 * marker, decoded. It keeps no calldata: a range's candidates wait for their
 * receipts, and kilobytes of input each would then outlive the young
 * generation and be copied by every collection meanwhile.
 */
export type Candidate = {
  tx: Pick<RawTransaction, 'hash' | 'from' | 'to' | 'transactionIndex'>
  own: Attributed | Malformed | undefined
  entryPoint: Address | undefined
  attributedOps: AttributedOp[]
  malformedOps: MalformedOp[]
}

export type AttributionRecord = {
  kind: 'transaction' | 'userOperation'
  txHash: Hex
  txIndex: number
  blockNumber: number
  blockHash: Hex
  blockTimestamp: number
  /** -1 for the transaction itself, else the op's position in the bundle. */
  userOpIndex: number
  userOpHash: Hex | undefined
  /**
   * Lowercase, whichever way the node or the calldata spelled it: unique
   * senders are counted by this text, so one wallet must have one spelling
   * (a 7702 account sends both transactions and UserOperations).
   */
  sender: Address
  target: Address | null
  status: 'success' | 'reverted'
  actualGasCost: bigint | undefined
  attribution: Attributed
}

/** What the store keeps of a record's attribution (store/attribution-columns.ts, store/fold.ts). */
export type StoredAttribution = Pick<Attributed, 'schemaId' | 'codes' | 'suffix' | 'suffixBytes' | 'suffixGas'>

/**
 * A record as the store receives it: its attribution without what only
 * resolving its codes needed (entries, registries, metadata). A commit
 * batch crosses to the commit thread by structured clone, whose cost grows
 * with every object it copies: a dense batch's entries cost more to copy
 * than the rest of its records (bench/LOG.md).
 */
export type StoredRecord = Omit<AttributionRecord, 'attribution'> & { attribution: StoredAttribution }

export function storedRecord(record: AttributionRecord): StoredRecord {
  const { schemaId, codes, suffix, suffixBytes, suffixGas } = record.attribution
  return { ...record, attribution: { schemaId, codes, suffix, suffixBytes, suffixGas } }
}

export type MalformedRecord = { txHash: Hex; userOpIndex: number; blockNumber: number; reason: string }

/**
 * The transactions of a block worth parsing, for the block scanner: calldata
 * ending with the marker, or a call to an EntryPoint (its UserOperations may
 * carry one). `entryPoints` holds lowercase addresses.
 */
export function candidateFilter(entryPoints: ReadonlySet<string>): TransactionFilter {
  return { inputSuffix: MARKER_HEX, toAddresses: entryPoints }
}

/**
 * Looks at one transaction and returns a Candidate when it needs a closer
 * look, or undefined for the common case of nothing to attribute.
 */
export function detectCandidate(tx: RawTransaction, entryPoints: ReadonlySet<string>): Candidate | undefined {
  const input = tx.input
  const ownMarker = hasMarker(input)
  const bundle = isBundle(tx.to, entryPoints) && mayCarryAttributedOps(input)
  if (!ownMarker && !bundle) return undefined

  // copies: the parsed transaction's strings are views of its JSON, calldata included
  const slim = { hash: detached(tx.hash), from: detached(tx.from), to: tx.to && detached(tx.to), transactionIndex: tx.transactionIndex && detached(tx.transactionIndex) }
  const candidate: Candidate = { tx: slim, own: undefined, entryPoint: undefined, attributedOps: [], malformedOps: [] }
  if (ownMarker) {
    const own = decodeAttribution(input)
    if (own.kind !== 'none') candidate.own = own
  }
  if (bundle) {
    candidate.entryPoint = slim.to!
    readBundle(candidate, extractUserOperations(input) ?? [])
  }
  const interesting = candidate.own !== undefined || candidate.attributedOps.length > 0 || candidate.malformedOps.length > 0
  return interesting ? candidate : undefined
}

/**
 * The suffixes of a bundle's UserOperations, within ATTRIBUTION_LIMITS: past
 * `maxBundleSuffixes` suffixes or `maxBundleCodes` codes the bundle stops,
 * and the UserOperation where it stopped is recorded as malformed with the
 * reason. What came before it counts; nothing after it is read, so one
 * bundle's rows, and the work to make them, stay bounded.
 */
function readBundle(candidate: Candidate, ops: readonly BundledUserOperation[]): void {
  let suffixes = 0
  let codes = 0
  for (const { index, sender, nonce, callData } of ops) {
    const result = decodeAttribution(callData)
    if (result.kind === 'none') continue
    const op = { index, sender, nonce }
    suffixes++
    if (result.kind === 'attributed') codes += result.codes.length
    const over =
      suffixes > ATTRIBUTION_LIMITS.maxBundleSuffixes
        ? `bundle carries more than ${ATTRIBUTION_LIMITS.maxBundleSuffixes} suffixes`
        : codes > ATTRIBUTION_LIMITS.maxBundleCodes
          ? `bundle carries more than ${ATTRIBUTION_LIMITS.maxBundleCodes} codes`
          : undefined
    if (over) {
      candidate.malformedOps.push({ op, result: { kind: 'malformed', reason: `${over}: this UserOperation and the rest are not read` } })
      return
    }
    if (result.kind === 'attributed') candidate.attributedOps.push({ op, result })
    else candidate.malformedOps.push({ op, result })
  }
}

/** Whether the receipt must be fetched: only for something that will be counted. */
export function needsReceipt(candidate: Candidate): boolean {
  return candidate.own?.kind === 'attributed' || candidate.attributedOps.length > 0
}

/** An address as a log topic holds it (an indexed address is 32 bytes, left-padded). */
const addressTopic = (address: string) => `0x${'0'.repeat(24)}${address.slice(2).toLowerCase()}`

/**
 * The logs of a candidate's receipt its records are built from: of a
 * bundle, the EntryPoint's UserOperationEvents of the attributed ops'
 * senders (topic 2); of a plain transaction, none. A receipt keeps no other
 * (rpc/scan/receipt-read.ts): anyone can make one hold a hundred megabytes of logs.
 */
export function receiptLogsNeeded(candidate: Candidate): LogFilter | undefined {
  if (candidate.attributedOps.length === 0 || !candidate.entryPoint) return undefined
  const senders = new Set(candidate.attributedOps.map(({ op }) => addressTopic(op.sender)))
  return { addresses: new Set([candidate.entryPoint.toLowerCase()]), topics: [new Set([USER_OPERATION_EVENT_TOPIC]), undefined, senders] }
}

function txIndexOf(tx: Candidate['tx']): number {
  return tx.transactionIndex ? Number.parseInt(tx.transactionIndex, 16) : 0
}

/** Malformed suffixes of a candidate: counted, never attributed. */
export function malformedOf(candidate: Candidate, block: BlockContext): MalformedRecord[] {
  const records: MalformedRecord[] = []
  if (candidate.own?.kind === 'malformed') {
    records.push({ txHash: candidate.tx.hash, userOpIndex: -1, blockNumber: block.number, reason: candidate.own.reason })
  }
  for (const { op, result } of candidate.malformedOps) {
    records.push({ txHash: candidate.tx.hash, userOpIndex: op.index, blockNumber: block.number, reason: result.reason })
  }
  return records
}

/**
 * Attribution records of a candidate once its receipt is known: one for the
 * transaction's own suffix and one per attributed UserOperation. A
 * UserOperation without its UserOperationEvent (the bundle reverted) did not
 * execute and is recorded as reverted.
 */
export function attributionsOf(candidate: Candidate, receipt: RawReceipt, block: BlockContext): AttributionRecord[] {
  const { tx } = candidate
  const txIndex = txIndexOf(tx)
  const records: AttributionRecord[] = []
  // every record is one object literal with the same keys in the same order (no `{ ...base }`): V8 gives spread
  // results of optimized code a hidden class each, kilobytes per record, and every reader of them goes megamorphic
  if (candidate.own?.kind === 'attributed') {
    records.push({
      kind: 'transaction',
      txHash: tx.hash,
      txIndex,
      blockNumber: block.number,
      blockHash: block.hash,
      blockTimestamp: block.timestamp,
      userOpIndex: -1,
      userOpHash: undefined,
      sender: tx.from.toLowerCase() as Address,
      target: tx.to,
      status: receipt.status === '0x1' ? 'success' : 'reverted',
      actualGasCost: undefined,
      attribution: candidate.own,
    })
  }
  if (candidate.attributedOps.length > 0) {
    const outcomes = userOperationOutcomes(receipt.logs, candidate.entryPoint!)
    for (const { op, result } of candidate.attributedOps) {
      const outcome = outcomeOf(outcomes, op)
      records.push({
        kind: 'userOperation',
        txHash: tx.hash,
        txIndex,
        blockNumber: block.number,
        blockHash: block.hash,
        blockTimestamp: block.timestamp,
        userOpIndex: op.index,
        userOpHash: outcome?.userOpHash,
        sender: op.sender,
        target: candidate.entryPoint ?? null,
        status: outcome?.success ? 'success' : 'reverted',
        actualGasCost: outcome?.actualGasCost,
        attribution: result,
      })
    }
  }
  return records
}
