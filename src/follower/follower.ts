import { setTimeout as sleep } from 'node:timers/promises'
import type { Hex } from 'viem'
import type { Database } from '../db/client.js'
import type { Logger } from '../logger.js'
import type { IndexerMetrics } from '../metrics/indexer.js'
import type { RangeQueue } from '../pipeline/queue.js'
import type { Rpc } from '../rpc/client.js'
import { createRangeCutter, type Cut } from './cut-ranges.js'
import { createTicker, targetOf, trackHead, watchNewHeads } from './head.js'
import { assertLockHeld, tryAcquireChainLock, type ChainLock } from './lock.js'
import { createProgressReporter, type EndpointPoint } from './progress.js'
import { prune } from './prune.js'
import { createReconciler } from './reconcile.js'
import { sweep } from './sweep.js'

const SWEEP_INTERVAL_MS = 15_000
const PRUNE_INTERVAL_MS = 60_000
/** Longest between two progress reports while following the head (every tick while backfilling). */
const PROGRESS_INTERVAL_MS = 250

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
  /** The chain's endpoints as the fetching processes see them, for the progress line. */
  endpoints?: () => Promise<readonly EndpointPoint[]>
}

/**
 * Follows one chain: backfills from the start block (or the checkpoint) in
 * block ranges, then tracks the head, checks that the index still sits on
 * the node's branch and rolls back what orphaned blocks counted. It only
 * writes ranges and enqueues jobs; workers do the indexing.
 *
 * The parts: head.ts (the head and the wait for the next), reconcile.ts
 * (flagged ranges and reorgs), cut-ranges.ts, sweep.ts, prune.ts, progress.ts;
 * this loop holds the chain lock and runs them in turn.
 */
export function createFollower(options: FollowerOptions) {
  const { chain, rpc, db, queue, logger: parentLogger, metrics } = options
  const { chainId } = chain
  const logger = parentLogger.child({ component: 'follower', chain_id: chainId })
  let stopped = false
  let running: Promise<void> | undefined
  let unwatch: (() => void) | undefined

  const ticker = createTicker(chain.pollIntervalMs)
  const progress = createProgressReporter({ chainId, startBlock: chain.startBlock, logger, metrics, liveWindow: Math.max(2, options.rangeSize), ...(options.endpoints && { endpoints: options.endpoints }) })
  const reconcile = createReconciler({ chainId, floor: chain.startBlock - 1, confirmations: chain.confirmations, rpc, logger, metrics })
  const cutRanges = createRangeCutter({ chainId, startBlock: chain.startBlock, rangeSize: options.rangeSize, maxPendingRanges: options.maxPendingRanges, rpc, queue, metrics })
  const sweepQueue = (lock: ChainLock) => sweep(lock.sql, queue, chainId, options.maxPendingRanges * 2)

  async function followWhileLocked(lock: ChainLock) {
    logger.info('follower lock acquired; following')
    let lastSweep = 0
    let lastPrune = Date.now()
    let lastProgress = 0
    while (!stopped) {
      const wokenMsAgo = ticker.takeWake()
      const tickStartedAt = performance.now()
      // the lock's check and the head's read and record go side by side (other connections, the node): a block
      // at the head waits for the longest, not the sum
      const lockHeld = assertLockHeld(lock, chainId)
      // awaited below, after the head's read: a lock lost with its connection rejects at once, and a rejection
      // with no handler by the end of this turn ends the process (the fault suite's Postgres outage did)
      lockHeld.catch(() => {})
      let head: number
      let headHash: Hex
      let parentHash: Hex
      let headRecorded: Promise<void>
      try {
        ;({ number: head, hash: headHash, parentHash, recorded: headRecorded } = await trackHead({ sql: db.$client, rpc, chainId, metrics }))
        await lockHeld
      } catch (error) {
        await lockHeld
        if (isDatabaseError(error)) throw error
        metrics?.rpcError(chainId)
        logger.warn({ err: (error as Error).message }, 'could not read the head; retrying')
        await ticker.wait()
        continue
      }
      const headReadAt = performance.now()
      const target = targetOf(head, chain.confirmations)
      let moreToCut = false
      try {
        const nodeHasOurTip = await reconcile(lock.sql, head, { number: head, hash: headHash, parentHash })
        const reconciledAt = performance.now()
        if (Date.now() - lastSweep > SWEEP_INTERVAL_MS) {
          await sweepQueue(lock)
          lastSweep = Date.now()
        }
        if (nodeHasOurTip) {
          const cut = await cutRanges(lock, target, { number: head, hash: headHash })
          moreToCut = cut.more
          if (metrics && isAtTheHead(cut, options.rangeSize)) {
            metrics.liveStage(chainId, 'head', headReadAt - tickStartedAt)
            metrics.liveStage(chainId, 'reconcile', reconciledAt - headReadAt)
            metrics.liveStage(chainId, 'cut', cut.cutMs)
            metrics.liveStage(chainId, 'enqueue', cut.enqueueMs)
            metrics.liveStage(chainId, 'follower', performance.now() - tickStartedAt)
            if (wokenMsAgo !== undefined) metrics.liveStage(chainId, 'wake', wokenMsAgo)
          }
        }
        await headRecorded
        if (Date.now() - lastPrune > PRUNE_INTERVAL_MS) {
          await prune(lock.sql, chainId, chain.confirmations)
          lastPrune = Date.now()
        }
        // at the head a tick comes with each block: the progress (a read of the checkpoint) is taken a few times a
        // second, not before every next block's tick
        if (moreToCut || Date.now() - lastProgress >= PROGRESS_INTERVAL_MS) {
          await progress.report(lock.sql, target)
          lastProgress = Date.now()
        }
      } catch (error) {
        if (isDatabaseError(error)) throw error
        metrics?.rpcError(chainId)
        logger.warn({ err: (error as Error).message }, 'follower step failed; retrying')
      }
      // keep cutting at once while a backfill has room in the queue; otherwise wait for the next block
      if (!moreToCut) await ticker.wait()
    }
  }

  async function run() {
    unwatch = watchNewHeads(chain.wsUrl, ticker.wake, logger)
    while (!stopped) {
      let lock: ChainLock | undefined
      try {
        lock = await tryAcquireChainLock(options.databaseUrl, chainId)
        if (!lock) {
          logger.debug('another follower holds this chain; waiting')
          await sleep(Math.max(chain.pollIntervalMs, 1_000))
          continue
        }
        reconcile.lockTaken()
        await sweepQueue(lock)
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
      ticker.wake()
      await running
    },
  }
}

/** A cut of fewer blocks than a range holds, nothing left to cut: ranges at the head, whose stages the live metrics time. */
export const isAtTheHead = (cut: Cut, rangeSize: number) =>
  cut.jobs.length > 0 && !cut.more && cut.jobs.at(-1)!.toBlock - cut.jobs[0]!.fromBlock + 1 < rangeSize

/** Errors of the database or of the lock's session: the follower lets go of the lock and takes it again. */
export function isDatabaseError(error: unknown): boolean {
  const err = error as { name?: string; code?: string } | undefined
  return err?.name === 'PostgresError' || err?.name === 'LockLostError' || (typeof err?.code === 'string' && /^(CONNECT|CONNECTION)_/.test(err.code))
}

export type Follower = ReturnType<typeof createFollower>
