/**
 * How hard the fault suite pushes. `full` (the default of `npm run test:faults`)
 * runs the trial counts of issue #6; `reduced` is the pass CI runs in a few
 * minutes on two cores. FAULTS_SEED makes every random choice reproducible.
 */
export type FaultScale = 'full' | 'reduced'

export type FaultKnobs = {
  /** Transactions (with UserOperation bundles) the crash trials backfill, and over how many blocks. */
  crashTransactions: number
  crashBlocks: number
  /** SIGKILLs per process kind (worker, follower, all-in-one), one per trial. */
  crashTrials: number
  reorgTrials: number
  /** How long Redis and Postgres stay down in the outage tests. */
  outageSeconds: number
  /** Backfills through a misbehaving RPC proxy, of how many transactions. */
  rpcTrials: number
  rpcTransactions: number
  /** Blocks mined while the follower reads from a lagging, load-balanced node. */
  lagBlocks: number
  httpRequests: number
  calldataInputs: number
  /** Blocks of the hostile-suffix fuzz (issue 20.1), each with 1-3 hostile transactions beside honest traffic. */
  hostileSuffixBlocks: number
  /** Differential runs (issue 11): calldata inputs against ox, batch responses against JSON.parse, bundles and receipts against viem. */
  differentialCodecInputs: number
  differentialBatches: number
  differentialBundles: number
}

const knobsByScale: Record<FaultScale, FaultKnobs> = {
  full: {
    crashTransactions: 20_000,
    crashBlocks: 400,
    crashTrials: 20,
    reorgTrials: 20,
    outageSeconds: 30,
    rpcTrials: 2,
    rpcTransactions: 3_000,
    lagBlocks: 60,
    httpRequests: 10_000,
    calldataInputs: 1_000_000,
    hostileSuffixBlocks: 120,
    differentialCodecInputs: 300_000,
    differentialBatches: 6_000,
    differentialBundles: 50_000,
  },
  reduced: {
    crashTransactions: 4_000,
    crashBlocks: 160,
    crashTrials: 2,
    reorgTrials: 5,
    outageSeconds: 10,
    rpcTrials: 1,
    rpcTransactions: 1_000,
    lagBlocks: 20,
    httpRequests: 2_000,
    calldataInputs: 200_000,
    hostileSuffixBlocks: 30,
    differentialCodecInputs: 60_000,
    differentialBatches: 1_500,
    differentialBundles: 10_000,
  },
}

function readScale(): FaultScale {
  const value = process.env.FAULTS_SCALE ?? 'full'
  if (value !== 'full' && value !== 'reduced') throw new Error(`FAULTS_SCALE must be full or reduced, not ${value}`)
  return value
}

export const faultScale: FaultScale = readScale()
export const knobs: FaultKnobs = knobsByScale[faultScale]

/** The run's seed: FAULTS_SEED when given, else a fresh one (printed in every report so a failure can be replayed). */
export const faultSeed: number = process.env.FAULTS_SEED ? Number(process.env.FAULTS_SEED) : Math.floor(Math.random() * 2 ** 31)
