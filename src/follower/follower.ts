import { setTimeout as sleep } from 'node:timers/promises'
import { createPublicClient, webSocket, type Hex } from 'viem'
import type { Database } from '../db/client.js'
import type { Logger } from '../logger.js'
import type { IndexerMetrics } from '../metrics/indexer.js'
import { pruneAttributionEvents } from '../store/events.js'
import type { RangeJob } from '../store/ranges.js'
import { enqueueRanges, rangeJobId, type RangeQueue } from '../pipeline/queue.js'
import type { RawHeader, Rpc } from '../rpc/client.js'
import { assertLockHeld, tryAcquireChainLock, type ChainLock } from './lock.js'
import { createProgressReporter } from './progress.js'
import {
  clearMismatchFlags,
  countPending,
  firstFlaggedRange,
  indexedThrough,
  insertRanges,
  lastRange,
  pendingRanges,
} from '../store/ranges.js'
import { checkBranch, findCommonAncestor, rangeBoundaryAtOrBelow } from './reorg.js'
import { rollbackAbove } from '../store/rollback.js'

const ZERO_HASH = `0x${'0'.repeat(64)}` as Hex
/** Range boundaries fetched per tick: bounds one tick's work while backfilling. */
const MAX_NEW_RANGES_PER_TICK = 100
const SWEEP_INTERVAL_MS = 15_000
const PRUNE_INTERVAL_MS = 60_000

export type FollowedChain = {
  chainId: number
  startBlock: number
  confirmations: number
  pollIntervalMs: number
  wsUrl?: string | undefined
}

export type FollowerOptions = {
  chain: FollowedChain
  rpc: Rpc
  db: Database
  /** Where the chain lock's own session connects (the same database as `db`). */
  databaseUrl: string
  queue: RangeQueue
  rangeSize: number
  maxPendingRanges: number
  logger: Logger
  metrics?: IndexerMetrics
}

/**
 * Follows one chain: backfills from the start block (or the checkpoint) in
 * block ranges, then tracks the head, checks that the index still sits on
 * the node's branch and rolls back what orphaned blocks counted. It only
 * writes ranges and enqueues jobs; workers do the indexing.
 */
export function createFollower(options: FollowerOptions) {
  const { chain, rpc, db, queue, logger: parentLogger, metrics } = options
  const { chainId } = chain
  const logger = parentLogger.child({ component: 'follower', chain_id: chainId })
  const floor = chain.startBlock - 1
  let stopped = false
  let wake: (() => void) | undefined
  let running: Promise<void> | undefined
  let unwatch: (() => void) | undefined

  const progress = createProgressReporter({ chainId, startBlock: chain.startBlock, logger, metrics, liveWindow: Math.max(2, options.rangeSize) })

  async function latestHeader(): Promise<RawHeader> {
    const header = await rpc.request<RawHeader | null>('eth_getBlockByNumber', ['latest', false])
    if (!header) throw new Error('node returned no latest block')
    return header
  }

  async function recordHead(header: RawHeader) {
    const number = Number.parseInt(header.number, 16)
    await db.$client`
      insert into chain_state (chain_id, head_block, head_hash, updated_at)
      values (${chainId}, ${number}, ${header.hash}, now())
      on conflict (chain_id) do update set head_block = excluded.head_block, head_hash = excluded.head_hash, updated_at = now()`
    metrics?.head(chainId, number)
    return number
  }

  /** Rolls the index back to the common ancestor at or below `mismatchAt`. */
  async function handleReorg(lock: ChainLock, mismatchAt: number, head: number) {
    const ancestor = await findCommonAncestor(lock.sql, rpc, chainId, mismatchAt, floor)
    const boundary = await rangeBoundaryAtOrBelow(lock.sql, chainId, ancestor, floor)
    const tip = await lastRange(lock.sql, chainId)
    const depth = (tip?.toBlock ?? boundary) - ancestor
    const details = { ancestor, rollback_to: boundary, depth, head, confirmations: chain.confirmations }
    if (depth > chain.confirmations) logger.error(details, 'REORG DEEPER THAN THE CONFIRMATION WINDOW: rolling back')
    else logger.warn(details, 'reorg: rolling back')
    const removed = await rollbackAbove(lock.sql, chainId, boundary)
    metrics?.reorg(chainId, depth)
    // info, not warn: each rollback is an event of its own, never folded into a repeat count
    logger.info({ ...details, ...removed }, 'rolled back; re-indexing the new branch')
  }

  /** Re-checks ranges a worker flagged; a node that merely served a stale block is not a reorg. */
  async function checkFlaggedRanges(lock: ChainLock, head: number) {
    const flagged = await firstFlaggedRange(lock.sql, chainId)
    if (!flagged) return
    const [end, start] = await rpc.headers(flagged.fromBlock === 0 ? [flagged.toBlock] : [flagged.toBlock, flagged.fromBlock - 1])
    if (!end) return // the node lacks the block: lag, leave the flag for later
    const startMatches = flagged.fromBlock === 0 || (!!start && start.hash.toLowerCase() === flagged.parentHash.toLowerCase())
    if (end.hash.toLowerCase() === flagged.toHash.toLowerCase() && startMatches) {
      await clearMismatchFlags(lock.sql, chainId)
      return
    }
    await handleReorg(lock, flagged.toBlock, head)
  }

  /** Head minus the confirmation depth: the highest block indexed. */
  const targetOf = (head: number) => head - chain.confirmations

  async function reconcile(lock: ChainLock, head: number) {
    await checkFlaggedRanges(lock, head)
    const check = await checkBranch(lock.sql, rpc, chainId, head)
    if (check.kind === 'reorg') await handleReorg(lock, check.mismatchAt, head)
    return check.kind !== 'behind'
  }

  async function parentHashOf(block: number): Promise<Hex | undefined> {
    if (block === 0) return ZERO_HASH
    const header = await rpc.header(block - 1)
    return header?.hash
  }

  /**
   * Cuts new ranges up to the target and enqueues them, unless too many wait
   * already (backpressure). Returns true when more could be cut right away.
   */
  async function extend(lock: ChainLock, head: number): Promise<boolean> {
    const target = targetOf(head)
    const pending = await countPending(lock.sql, chainId)
    metrics?.pendingRanges(chainId, pending)
    const room = Math.min(MAX_NEW_RANGES_PER_TICK, options.maxPendingRanges - pending)
    if (room <= 0) return false
    const tip = await lastRange(lock.sql, chainId)
    const next = tip ? tip.toBlock + 1 : chain.startBlock
    if (next > target) return false

    const bounds: Array<{ from: number; to: number }> = []
    for (let from = next; from <= target && bounds.length < room; from += options.rangeSize) {
      bounds.push({ from, to: Math.min(from + options.rangeSize - 1, target) })
    }
    const parentHash = tip ? tip.toHash : await parentHashOf(next)
    if (!parentHash) return false
    const headers = await rpc.headers(bounds.map((b) => b.to))
    const jobs: RangeJob[] = []
    let parent = parentHash
    for (const [i, { from, to }] of bounds.entries()) {
      const header = headers[i]
      // a node that does not have the block yet (load-balanced, lagging): cut here, continue next tick
      if (!header) break
      jobs.push({ chainId, fromBlock: from, toBlock: to, parentHash: parent, toHash: header.hash })
      parent = header.hash
    }
    await assertLockHeld(lock, chainId)
    await insertRanges(lock.sql, jobs)
    await enqueueRanges(queue, jobs)
    const last = jobs.at(-1)
    return jobs.length === bounds.length && last !== undefined && last.toBlock < target
  }

  /**
   * Makes sure every pending range has a live job: jobs are lost when Redis
   * loses its data, and a job that exhausted its retries sits in `failed`.
   */
  async function sweep(lock: ChainLock) {
    const pending = await pendingRanges(lock.sql, chainId, options.maxPendingRanges * 2)
    const pendingIds = new Set(pending.map(rangeJobId))
    const failed = await queue.getFailed(0, 1_000)
    for (const job of failed) {
      if (job.data?.chainId !== chainId) continue
      if (pendingIds.has(job.id ?? '')) await job.retry().catch(() => {})
      else await job.remove().catch(() => {})
    }
    await enqueueRanges(queue, pending)
  }

  async function prune(lock: ChainLock) {
    const through = await indexedThrough(lock.sql, chainId)
    if (through === undefined) return
    const keep = Math.max(256, chain.confirmations * 4)
    await lock.sql`delete from blocks where chain_id = ${chainId} and number < ${through - keep}`
    // every chain's follower prunes every chain's old events: the same statement, harmless twice
    await pruneAttributionEvents(lock.sql)
  }

  async function waitForNextTick() {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, chain.pollIntervalMs)
      wake = () => {
        clearTimeout(timer)
        resolve()
      }
    })
    wake = undefined
  }

  async function followWhileLocked(lock: ChainLock) {
    logger.info('follower lock acquired; following')
    let lastSweep = 0
    let lastPrune = Date.now()
    while (!stopped) {
      await assertLockHeld(lock, chainId)
      let head: number
      try {
        head = await recordHead(await latestHeader())
      } catch (error) {
        if (isDatabaseError(error)) throw error
        metrics?.rpcError(chainId)
        logger.warn({ err: (error as Error).message }, 'could not read the head; retrying')
        await waitForNextTick()
        continue
      }
      let moreToCut = false
      try {
        const nodeHasOurTip = await reconcile(lock, head)
        if (Date.now() - lastSweep > SWEEP_INTERVAL_MS) {
          await sweep(lock)
          lastSweep = Date.now()
        }
        if (nodeHasOurTip) moreToCut = await extend(lock, head)
        if (Date.now() - lastPrune > PRUNE_INTERVAL_MS) {
          await prune(lock)
          lastPrune = Date.now()
        }
        await progress.report(lock.sql, targetOf(head))
      } catch (error) {
        if (isDatabaseError(error)) throw error
        metrics?.rpcError(chainId)
        logger.warn({ err: (error as Error).message }, 'follower step failed; retrying')
      }
      // keep cutting at once while a backfill has room in the queue; otherwise wait for the next block
      if (!moreToCut) await waitForNextTick()
    }
  }

  function watchNewHeads() {
    if (!chain.wsUrl) return
    const client = createPublicClient({ transport: webSocket(chain.wsUrl, { reconnect: true }) })
    unwatch = client.watchBlockNumber({
      emitOnBegin: false,
      // subscribe to newHeads over the socket instead of polling it
      poll: false as never,
      onBlockNumber: () => wake?.(),
      onError: (error) => logger.warn({ err: error.message }, 'websocket head subscription error; polling continues'),
    })
  }

  async function run() {
    watchNewHeads()
    while (!stopped) {
      let lock: ChainLock | undefined
      try {
        lock = await tryAcquireChainLock(options.databaseUrl, chainId)
        if (!lock) {
          logger.debug('another follower holds this chain; waiting')
          await sleep(Math.max(chain.pollIntervalMs, 1_000))
          continue
        }
        await sweep(lock)
        await followWhileLocked(lock)
      } catch (error) {
        logger.warn({ err: (error as Error).message }, 'follower interrupted; will re-acquire the chain lock')
        await sleep(1_000)
      } finally {
        await lock?.release()
      }
    }
  }

  return {
    start() {
      running ??= run()
    },
    async stop() {
      stopped = true
      unwatch?.()
      wake?.()
      await running
    },
  }
}

function isDatabaseError(error: unknown): boolean {
  const err = error as { name?: string; code?: string } | undefined
  return err?.name === 'PostgresError' || err?.name === 'LockLostError' || (typeof err?.code === 'string' && /^(CONNECT|CONNECTION)_/.test(err.code))
}

export type Follower = ReturnType<typeof createFollower>
