import type { Bench } from './lib/bench.js'
import { measureCase, type CaseResult } from './lib/backfill-case.js'
import { serveChain } from './lib/chain-setup.js'
import { requireIndexer } from './lib/indexer.js'
import type { PipelineSettings } from './lib/pipeline-run.js'
import { fmt, printTable, ratio, type Target } from './lib/report.js'
import { defaultChainParams, denseChainParams, floodChainParams, type ChainParams } from './chain/generate.js'
import { profileSpec, type ProfileName } from './chain/node-profiles.js'

/**
 * Backfill throughput of the indexer on its DEFAULT settings (nothing tuned:
 * the adaptive transport must find the operating point itself) against the
 * floor measured in the same run on the same node: the best plain client of
 * a sweep (bench/lib/backfill-case.ts). Each chain is served by the replay
 * node in its own process; each case puts the node on one profile
 * (bench/chain/node-profiles.ts), so that a transport tuned on one kind of
 * node cannot pass for good on all:
 *
 * - everyday chain (200-tx blocks, ~2% attributed, ≥ 1M transactions in the
 *   full run) on the fast node, the serial node, the growing node (cost per
 *   call grows with the batch's length), the remote node and the capped
 *   remote node (4 in flight, 120 ms). Its floor is the plain client that
 *   produces the same answer: every block plus the candidates' receipts
 *   (issue 41), in batches of a length swept on its own (floor.ts); blocks alone are shown beside it as a reference. Besides
 *   speed, the node's CPU serving the daemon's backfill is held against one
 *   pass of that floor;
 * - a Base-sized chain (600-tx, ~1.1 MB blocks) on the fast node, where the
 *   point is the batch size the transport settles on;
 * - a dense chain (half the transactions attributed, bundles, a long tail of
 *   codes; ≥ 1M transactions in the full run) on the fast node, whose floor
 *   fetches every block's receipts too (`eth_getBlockReceipts`): there most
 *   transactions need their outcome. Its memory is held against the
 *   everyday chain's.
 * - a flooded chain (90% attributed, the direct ones with 32 codes each:
 *   ~20 rows a transaction, ~200,000 a range of 50 blocks) on the fast node:
 *   what an attacker can buy on a chain of cheap gas. It is held to memory
 *   (against the everyday chain's) and exact totals, not to a throughput
 *   goal: its cost is the commit of every row, which it must not skip.
 *
 * For experiments (tuning against one profile, say), environment knobs:
 * `BENCH_BACKFILL_CASES=everyday/serial,dense/fast` runs only the cases
 * named; `BENCH_BACKFILL_BLOCKS=1000` sizes every chain to that many blocks
 * (sample: a fifth of them) and `BENCH_BACKFILL_ROUNDS=1` sets the rounds;
 * `BENCH_INDEXER_ENV='RPC_MAX_CONCURRENCY=4 …'` sets indexer settings;
 * `BENCH_NODE_OPTIONS='serial:requestMs=5,callMs=0.1 remote:latencyMs=120,maxInFlight=4'`
 * changes a node profile's parameters (node-profiles.ts), to try the
 * transport on other nodes than the three it is published against;
 * `BENCH_DB_LOCALE=en_US.UTF-8` creates the indexer's database with that
 * locale (lib/indexer.ts), to try the commit on another database. The
 * results record every knob used; only a run without them is publishable.
 */
type ChainName = 'everyday' | 'base-sized' | 'dense' | 'flood'
type CaseName = `${ChainName}/${ProfileName}`

const CASES: ReadonlyArray<{ chain: ChainName; profile: ProfileName }> = [
  { chain: 'everyday', profile: 'fast' },
  { chain: 'everyday', profile: 'serial' },
  { chain: 'everyday', profile: 'growing' },
  { chain: 'everyday', profile: 'remote' },
  { chain: 'everyday', profile: 'capped' },
  { chain: 'base-sized', profile: 'fast' },
  { chain: 'dense', profile: 'fast' },
  { chain: 'flood', profile: 'fast' },
]

type ChainSize = { blocks: number; txPerBlock: number; sampleBlocks: number }

/** What each chain is made of, and whether its floor fetches block receipts. */
const CHAINS: Record<ChainName, { params: Omit<ChainParams, 'blocks' | 'txPerBlock'>; receipts: boolean }> = {
  everyday: { params: defaultChainParams, receipts: false },
  'base-sized': { params: defaultChainParams, receipts: false },
  dense: { params: denseChainParams, receipts: true },
  flood: { params: floodChainParams, receipts: true },
}

function chainSizes(quick: boolean): Record<ChainName, ChainSize> {
  const sizes: Record<ChainName, ChainSize> = {
    // quick: a sweep point is a few batches, enough to prove the sweep runs, not to rank anything
    everyday: { blocks: quick ? 60 : 5_000, txPerBlock: 200, sampleBlocks: quick ? 10 : 1_000 },
    'base-sized': { blocks: quick ? 12 : 600, txPerBlock: 600, sampleBlocks: quick ? 4 : 200 },
    dense: { blocks: quick ? 40 : 5_000, txPerBlock: 200, sampleBlocks: quick ? 10 : 1_000 },
    // ~4,000 rows a block: 200 blocks are 800,000 rows, a minute of commits
    flood: { blocks: quick ? 12 : 200, txPerBlock: 200, sampleBlocks: quick ? 4 : 40 },
  }
  const blocks = positiveKnob('BENCH_BACKFILL_BLOCKS')
  if (blocks === undefined) return sizes
  const sized = (size: ChainSize) => ({ ...size, blocks, sampleBlocks: Math.max(1, Math.round(blocks / 5)) })
  // the flooded chain keeps its size: at the others' it would be millions of rows to commit
  return { everyday: sized(sizes.everyday), 'base-sized': sized(sizes['base-sized']), dense: sized(sizes.dense), flood: sizes.flood }
}

function positiveKnob(name: string): number | undefined {
  const value = process.env[name]
  if (value === undefined || value === '') return undefined
  const number = Number(value)
  if (!Number.isInteger(number) || number < 1) throw new Error(`${name}: must be a positive integer, got ${value}`)
  return number
}

function selectedCases(): typeof CASES {
  const wanted = process.env.BENCH_BACKFILL_CASES?.split(',').map((name) => name.trim()).filter(Boolean)
  if (!wanted) return CASES
  const known = CASES.map((c) => `${c.chain}/${c.profile}`)
  const unknown = wanted.filter((name) => !known.includes(name))
  if (unknown.length > 0) throw new Error(`BENCH_BACKFILL_CASES: unknown case ${unknown.join(', ')} (known: ${known.join(', ')})`)
  return CASES.filter((c) => wanted.includes(`${c.chain}/${c.profile}`))
}

/** Per profile, the parameters BENCH_NODE_OPTIONS changes (`profile:key=number,…` separated by spaces). */
function nodeOverrides(): Partial<Record<ProfileName, Record<string, number>>> {
  const overrides: Partial<Record<ProfileName, Record<string, number>>> = {}
  for (const part of (process.env.BENCH_NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)) {
    const [profile, list = ''] = part.split(':') as [ProfileName, string?]
    if (profile === 'fast') throw new Error(`BENCH_NODE_OPTIONS: the fast node takes no options, got ${part}`)
    for (const pair of list.split(',').filter(Boolean)) {
      const [key, value] = pair.split('=')
      const number = Number(value)
      if (!key || !Number.isFinite(number)) throw new Error(`BENCH_NODE_OPTIONS: ${pair} is not key=number`)
      ;(overrides[profile] ??= {})[key] = number
    }
  }
  return overrides
}

/** KEY=VALUE pairs for the indexer's environment, for experiments only. */
function indexerOverrides(): Record<string, string> {
  const pairs = (process.env.BENCH_INDEXER_ENV ?? '').split(/\s+/).filter(Boolean)
  return Object.fromEntries(pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]))
}

export const backfill: Bench = async ({ quick, cpuProfileDir }) => {
  requireIndexer()
  const reps = positiveKnob('BENCH_BACKFILL_ROUNDS') ?? (quick ? 1 : 3)
  const overrides = indexerOverrides()
  const nodeOptions = nodeOverrides()
  const specOf = (profile: ProfileName) => profileSpec(profile, nodeOptions[profile])
  const settings: PipelineSettings = { pollIntervalMs: 100, env: overrides }
  const sizes = chainSizes(quick)
  const cases = selectedCases()
  const params = {
    chains: sizes,
    cases: cases.map((c) => `${c.chain}/${c.profile}`),
    reps,
    // receipts' lengths: from a growing node's cheapest (~20 calls) to 1,000 (the indexer's own length in issue 41, ~230 blocks' candidates); floor.ts says why two block points
    sweep: { batchSizes: [5, 10, 20, 50], concurrencies: [2, 4, 8, 16], receiptBatchSizes: [10, 25, 50, 100, 200, 1000], receiptBlockPoints: 2, finalists: 3 },
    profiles: Object.fromEntries(cases.map((c) => [c.profile, specOf(c.profile)])),
    settings: Object.keys(overrides).length === 0 ? 'indexer defaults (POLL_INTERVAL_MS=100)' : `NOT DEFAULTS: ${process.env.BENCH_INDEXER_ENV}`,
    knobs: Object.fromEntries(
      ['BENCH_BACKFILL_CASES', 'BENCH_BACKFILL_BLOCKS', 'BENCH_BACKFILL_ROUNDS', 'BENCH_INDEXER_ENV', 'BENCH_NODE_OPTIONS', 'BENCH_DB_LOCALE'].flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])),
    ),
  }
  const results: Partial<Record<CaseName, CaseResult>> = {}
  for (const chainName of [...new Set(cases.map((c) => c.chain))]) {
    const size = sizes[chainName]
    const served = await serveChain({ ...CHAINS[chainName].params, blocks: size.blocks, txPerBlock: size.txPerBlock })
    try {
      const truth = served.chain.truth()
      for (const { profile } of cases.filter((c) => c.chain === chainName)) {
        const label = `backfill ${chainName}/${profile}`
        results[`${chainName}/${profile}`] = await measureCase(served.replay, truth, {
          label,
          profile: specOf(profile),
          receipts: CHAINS[chainName].receipts,
          sampleBlocks: size.sampleBlocks,
          ...params.sweep,
          reps,
          timeoutMs: quick ? 120_000 : 900_000,
          settings,
          // one profiled case (the first run) is enough, and keeps the others unslowed
          cpuProfileDir: `${chainName}/${profile}` === params.cases[0] ? cpuProfileDir : undefined,
        })
      }
    } finally {
      await served.close()
    }
  }
  const measured = Object.values(results)
  printTable(
    `backfill: every case, median of ${reps} round${reps > 1 ? 's' : ''} (${params.settings})`,
    ['case', 'pipeline tx/s', 'floor tx/s (blocks × in flight, receipts a request)', 'ratio', 'rounds', 'blocks-only reference tx/s (point), ratio', 'settled (batch, allowed / in flight)', 'node CPU s, daemon / floor', 'peak RSS MiB'],
    measured.map((r) => [
      r.label.replace('backfill ', ''),
      fmt(r.pipelineTxPerSecond),
      `${fmt(r.floorTxPerSecond)} (${r.floorPoint.batchSize} × ${r.floorPoint.concurrency}${r.floorPoint.receiptBatchSize === null ? '' : `, receipts ${r.floorPoint.receiptBatchSize}`})`,
      ratio(r.ratio),
      r.ratios.map((value) => fmt(value, 2)).join(' '),
      r.reference ? `${fmt(r.reference.txPerSecond)} (${r.reference.point.batchSize} × ${r.reference.point.concurrency}), ${ratio(r.reference.ratio)}` : '—',
      `${r.settled.blockBatchSize}, ${r.settled.concurrencyLimit} / ${r.settled.inFlight}`,
      `${fmt(r.nodeSeconds.daemon, 2)} / ${fmt(r.nodeSeconds.floor, 2)}`,
      fmt(r.peakRssMiB),
    ]),
  )
  const targets: Target[] = measured.filter((r) => r.label !== 'backfill flood/fast').map((r) => {
    // the dense chain's goal is its own (issue 23): its floor reads every receipt, the indexer a commit per attribution;
    // the everyday chain's is to beat the plain client producing the same answer (issue 41)
    const goal = r.floorPoint.receipts ? 0.7 : r.label.startsWith('backfill everyday/') ? 1.0 : 0.9
    return {
      name: `${r.label} vs its floor ${Object.keys(overrides).length === 0 ? 'on defaults' : '(NOT DEFAULTS)'}`,
      goal: `≥ ${goal}× the best plain client on the same node${r.floorPoint.receipts ? ' (blocks + block receipts)' : " (blocks + the candidates' receipts)"}`,
      actual: `${ratio(r.ratio)} (settled at batch ${r.settled.blockBatchSize}, ${r.settled.concurrencyLimit} in flight)`,
      met: r.ratio >= goal,
    }
  })
  // the node works no more for the daemon than for the plain client producing the same answer (issue 41)
  for (const r of measured.filter((r) => r.label.startsWith('backfill everyday/'))) {
    targets.push({
      name: `${r.label} node cost`,
      goal: "node CPU s (process + modelled thread) serving the daemon's backfill ≤ one pass of the floor",
      actual: `${fmt(r.nodeSeconds.daemon, 2)} s vs ${fmt(r.nodeSeconds.floor, 2)} s (${ratio(r.nodeSeconds.daemon / r.nodeSeconds.floor)})`,
      met: r.nodeSeconds.daemon <= r.nodeSeconds.floor,
    })
  }
  // the dense and flooded chains' memory is held against the everyday chain's, measured on the same node
  const sparse = results['everyday/fast']
  for (const [chain, name] of [['dense', 'dense chain'], ['flood', 'flooded chain']] as const) {
    const heavy = results[`${chain}/fast`]
    if (!sparse || !heavy) continue
    targets.push({
      name: `backfill ${name} memory`,
      goal: "peak RSS ≤ 1.5× the everyday chain's (fast node)",
      actual: `${fmt(heavy.peakRssMiB)} MiB vs ${fmt(sparse.peakRssMiB)} MiB (${ratio(heavy.peakRssMiB / sparse.peakRssMiB)})`,
      met: heavy.peakRssMiB <= 1.5 * sparse.peakRssMiB,
    })
  }
  targets.push({ name: 'backfill totals', goal: 'equal to ground truth in every round', actual: measured.every((r) => r.verified) ? 'equal' : 'different', met: measured.every((r) => r.verified) })
  return { params, figures: results, targets }
}
