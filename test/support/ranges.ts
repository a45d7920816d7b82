import type { Address, Hex } from 'viem'
import type { Attributed } from '../../src/attribution/decode.js'
import type { Database } from '../../src/db/client.js'
import { commitRange, type AttributionRow, type CommitOutcome, type RangeResult } from '../../src/store/commit.js'
import type { RangeJob } from '../../src/store/ranges.js'

/** A 32-byte hash spelled from a label, so rows and ranges are easy to tell apart in a failing test. */
export const labelHash = (label: string) => `0x${Buffer.from(label).toString('hex').padEnd(64, '0').slice(0, 64)}` as Hex
export const senderAddress = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as Address

/** One attribution as the pipeline hands it to the commit statement. */
export type TestAttribution = {
  tx: string
  code: string
  sender: Address
  /** Block time, seconds since the epoch. */
  timestamp: number
  block: number
  kind?: 'transaction' | 'userOperation'
  userOpIndex?: number
  status?: 'success' | 'reverted'
  /** A custom registry named in the suffix: its own namespace. */
  registry?: { chainId: number; address: Address }
}

export function attributionRow(item: TestAttribution): AttributionRow {
  const kind = item.kind ?? 'transaction'
  const attribution: Attributed = {
    kind: 'attributed',
    schemaId: item.registry ? 1 : 0,
    codes: [item.code],
    entries: [{ code: item.code, role: 'service', valid: true }] as Attributed['entries'],
    suffix: '0x0180218021802180218021802180218021',
    suffixBytes: 17,
    suffixGas: 100,
  }
  return {
    code: item.code,
    record: {
      kind,
      txHash: labelHash(item.tx),
      txIndex: 0,
      blockNumber: item.block,
      blockHash: labelHash(`block${item.block}`),
      blockTimestamp: item.timestamp,
      userOpIndex: kind === 'userOperation' ? (item.userOpIndex ?? 0) : -1,
      userOpHash: kind === 'userOperation' ? labelHash(`${item.tx}op${item.userOpIndex ?? 0}`) : undefined,
      sender: item.sender,
      target: null,
      status: item.status ?? 'success',
      actualGasCost: undefined,
      attribution,
    },
    resolution: item.registry ? { status: 'custom', wallet: null, registry: item.registry } : { status: 'unregistered', wallet: null, registry: null },
  }
}

export type TestRange = { chainId: number; fromBlock: number; toBlock: number; branch: string; items: TestAttribution[] }

/** Cuts the range as the follower would (a pending `ranges` row) and returns what a worker hands the commit for it. */
export async function cutRange(db: Database, range: TestRange): Promise<RangeResult> {
  const job: RangeJob = {
    chainId: range.chainId,
    fromBlock: range.fromBlock,
    toBlock: range.toBlock,
    parentHash: labelHash(`p${range.fromBlock}`),
    toHash: labelHash(`${range.branch}${range.toBlock}`),
  }
  await db.$client`
    insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash)
    values (${job.chainId}, ${job.fromBlock}, ${job.toBlock}, ${job.parentHash}, ${job.toHash})`
  return { job, blocks: [], txCount: range.items.length, rows: range.items.map(attributionRow), malformed: [] }
}

/** Cuts the range as the follower would, then commits it through the real commit statement, as a worker would. */
export async function cutAndCommit(db: Database, range: TestRange): Promise<CommitOutcome> {
  return commitRange(db, await cutRange(db, range))
}
