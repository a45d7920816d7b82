import { availableParallelism } from 'node:os'
import { measureFloor, sweepFloor, type FloorResult, type Sweep, type SweepPoint } from '../chain/floor.js'
import type { ChainTruth } from '../chain/truth.js'
import type { ProfileSpec } from '../chain/node-profiles.js'
import type { ReplayProcess } from '../chain/replay-process.js'
import type { ReplayStats } from '../chain/replay-server.js'
import type { CpuSeconds } from './cpu.js'
import { runBackfill, type PipelineRun, type PipelineSettings } from './pipeline-run.js'
import { fmt, printTable, ratio } from './report.js'
import { median } from './stats.js'

/**
 * One backfill case: a chain served by the replay node on one profile. The
 * floor is the best plain client of a sweep on that same node, in the same
 * run (batch sizes × requests in flight ranked on a sample of blocks, the
 * best few fetching the whole chain, the fastest of them kept); then each
 * round measures the pipeline on its defaults and that floor, alternating
 * which goes first, plus the indexer's RPC client alone as a diagnostic.
 *
 * On a sparse chain the floor is the plain client that produces the same
 * answer: every block plus the candidates' receipts (floor.ts,
 * `candidates`), their batches of a length swept on their own at the best
 * block points (`receiptBatchSizes`); the blocks-only client, today's figure before issue 41,
 * is swept and measured beside it as a reference. A dense chain's floor
 * asks every block's receipts. Each round also reads what the node spent
 * (its process's CPU, plus a modelled thread's busy time on the one-thread
 * profiles) serving the daemon's backfill and one pass of the floor.
 */
export type CaseSpec = {
  label: string
  profile: ProfileSpec
  /** The floor asks every block's receipts too (a dense chain: most transactions need their outcome). */
  receipts: boolean
  sampleBlocks: number
  batchSizes: readonly number[]
  concurrencies: readonly number[]
  /** Lengths of the candidates' receipts batches the sweep tries (sparse chains). */
  receiptBatchSizes: readonly number[]
  /** How many of the best block points get every receipts length tried. */
  receiptBlockPoints: number
  finalists: number
  reps: number
  timeoutMs: number
  settings: PipelineSettings
  cpuProfileDir?: string | undefined
}

type NodeCost = { seconds: number; modelledBusySeconds: number; requests: RequestShapes }
type RequestShapes = Pick<ReplayStats, 'shapes' | 'arrivedWithHeld' | 'requests'>
type Round = {
  floor: FloorResult
  floorNode: NodeCost
  /** The blocks-only plain client at its own best point (sparse chains), with its node cost. */
  reference: { floor: FloorResult; node: NodeCost } | undefined
  rpcClient: FloorResult
  pipeline: PipelineRun
  ratio: number
}

const MiB = 2 ** 20
const perSecond = (count: number, ms: number) => (count / ms) * 1000
const perMillion = (seconds: number, transactions: number) => (seconds * 1e6) / transactions
const nodeSecondsOf = (run: PipelineRun) => run.nodeCost.processCpuSeconds + run.nodeCost.modelledBusySeconds

/** A floor run with what the node spent serving it (its process's CPU plus a modelled thread's busy time). */
async function floorWithNodeCost(replay: ReplayProcess, run: () => Promise<FloorResult>): Promise<{ floor: FloorResult; node: NodeCost }> {
  await replay.resetStats()
  const floor = await run()
  const stats = await replay.stats()
  return {
    floor,
    node: {
      seconds: (stats.processCpuMs + stats.modelledBusyMs) / 1000,
      modelledBusySeconds: stats.modelledBusyMs / 1000,
      requests: { shapes: stats.shapes, arrivedWithHeld: stats.arrivedWithHeld, requests: stats.requests },
    },
  }
}

/**
 * What a client asked the node, request by request: per kind of call, the
 * requests and their lengths (the commonest first; `1×0` a call sent alone),
 * and how many requests the node already held when each arrived.
 */
export function describeRequests(requests: RequestShapes): string {
  const kinds = Object.entries(requests.shapes)
    .map(([kind, byLength]) => {
      const lengths = Object.entries(byLength).map(([length, count]) => [Number(length), count] as const)
      const count = lengths.reduce((sum, [, n]) => sum + n, 0)
      const calls = lengths.reduce((sum, [length, n]) => sum + Math.max(1, length) * n, 0)
      const common = [...lengths].sort((a, b) => b[1] - a[1] || b[0] - a[0])
      const shown = common.slice(0, 6).map(([length, n]) => `${n}×${length}`).join(' ')
      return { kind, count, text: `${kind} ${count} requests / ${calls} calls [${shown}${common.length > 6 ? ' …' : ''}]` }
    })
    .sort((a, b) => b.count - a.count)
  const held = Object.entries(requests.arrivedWithHeld).map(([n, count]) => [Number(n), count] as const)
  const meanHeld = held.reduce((sum, [n, count]) => sum + n * count, 0) / Math.max(1, requests.requests)
  const mostHeld = Math.max(0, ...held.map(([n]) => n))
  return `${requests.requests} requests (held on arrival: mean ${fmt(meanHeld, 1)}, most ${mostHeld}); ${kinds.map((k) => k.text).join('; ')}`
}

const withRefusals = (point: SweepPoint) => `${fmt(point.txPerSecond)}${point.refused > 0 ? ` (${point.refused})` : ''}`
/** A sweep point as `b20×c8` (blocks per request × in flight), with `r100` (receipts per request) when the client asks any. */
const pointName = (point: { batchSize: number; concurrency: number; receiptBatchSize: number }, candidates: boolean) =>
  `b${point.batchSize}×c${point.concurrency}${candidates ? ` r${point.receiptBatchSize}` : ''}`

function printSweep(label: string, sweep: Sweep, sampleBlocks: number, candidates: boolean): void {
  // stage 1: block batch × concurrency, receipts at one length for all (or at the blocks' batch size)
  const blockStage = sweep.ranked.filter((p) => p.receiptBatchSize === (sweep.sampleReceiptBatchSize ?? p.batchSize))
  const batchSizes = [...new Set(blockStage.map((point) => point.batchSize))].sort((a, b) => a - b)
  const concurrencies = [...new Set(blockStage.map((point) => point.concurrency))].sort((a, b) => a - b)
  const at = (batchSize: number, concurrency: number) => blockStage.find((p) => p.batchSize === batchSize && p.concurrency === concurrency)
  printTable(
    `${label}: plain client sweep, tx/s over the first ${fmt(sampleBlocks)} blocks (429s in brackets)` +
      `${sweep.sampleReceiptBatchSize !== undefined ? `, receipts ${sweep.sampleReceiptBatchSize} a request` : ''}; whole chain: ` +
      sweep.finalists.map((p) => `${pointName(p, candidates)} ${fmt(p.txPerSecond)}`).join(', ') +
      `; floor at ${pointName(sweep, candidates)}`,
    ['batch \\ in flight', ...concurrencies.map(String)],
    batchSizes.map((batchSize) => [
      String(batchSize),
      ...concurrencies.map((concurrency) => {
        const point = at(batchSize, concurrency)
        return point ? withRefusals(point) : ''
      }),
    ]),
  )
  if (sweep.sampleReceiptBatchSize === undefined) return
  // stage 2: every receipts length at the best block points
  const blockPoints = [...new Set(sweep.ranked.filter((p) => !blockStage.includes(p)).map((p) => `${p.batchSize}×${p.concurrency}`))]
  const lengths = [...new Set(sweep.ranked.map((p) => p.receiptBatchSize))].sort((a, b) => a - b)
  printTable(
    `${label}: receipts per request at the best block points, tx/s over the same blocks`,
    ['blocks × in flight \\ receipts', ...lengths.map(String)],
    blockPoints.map((name) => [
      name,
      ...lengths.map((length) => {
        const point = sweep.ranked.find((p) => `${p.batchSize}×${p.concurrency}` === name && p.receiptBatchSize === length)
        return point ? withRefusals(point) : ''
      }),
    ]),
  )
}

export async function measureCase(replay: ReplayProcess, truth: ChainTruth, spec: CaseSpec) {
  await replay.setProfile(spec.profile)
  await replay.release({ head: truth.lastBlock })
  // a sparse chain's fair floor asks the candidates' receipts; blocks alone are its reference
  const candidates = !spec.receipts
  const sweepStarted = performance.now()
  const sweepOf = (withCandidates: boolean) =>
    sweepFloor({
      url: replay.url,
      from: 1,
      to: truth.lastBlock,
      sampleBlocks: spec.sampleBlocks,
      batchSizes: spec.batchSizes,
      concurrencies: spec.concurrencies,
      receiptBatchSizes: spec.receiptBatchSizes,
      receiptBlockPoints: spec.receiptBlockPoints,
      finalists: spec.finalists,
      receipts: spec.receipts,
      candidates: withCandidates,
    })
  const sweep = await sweepOf(candidates)
  printSweep(`${spec.label}${candidates ? ' (blocks + candidates\' receipts)' : ''}`, sweep, spec.sampleBlocks, candidates)
  const referenceSweep = candidates ? await sweepOf(false) : undefined
  if (referenceSweep) printSweep(`${spec.label} (blocks only, reference)`, referenceSweep, spec.sampleBlocks, false)
  process.stdout.write(`${spec.label}: sweep took ${fmt((performance.now() - sweepStarted) / 1000, 1)} s\n`)
  const floorAt = async (at: Sweep, client: 'raw' | 'indexer-rpc', withCandidates: boolean) => {
    await replay.release({ head: truth.lastBlock })
    return floorWithNodeCost(replay, () =>
      measureFloor({
        url: replay.url,
        from: 1,
        to: truth.lastBlock,
        batchSize: at.batchSize,
        receiptBatchSize: at.receiptBatchSize,
        concurrency: at.concurrency,
        client,
        receipts: spec.receipts,
        candidates: withCandidates,
      }),
    )
  }
  const floor = (client: 'raw' | 'indexer-rpc') => floorAt(sweep, client, client === 'raw' && candidates)
  const rounds: Round[] = []
  for (let round = 0; round < spec.reps; round++) {
    const pipeline = () =>
      runBackfill({
        label: `${spec.label.replace(/\W+/g, '-')}-${round}`,
        replay,
        truth,
        settings: spec.settings,
        timeoutMs: spec.timeoutMs,
        ...(spec.cpuProfileDir && round === 0 && { cpuProfileDir: spec.cpuProfileDir }),
      })
    // alternate which runs first, so neither always gets the warmer page cache
    const [floorRun, pipelineRun] = round % 2 === 0 ? [await floor('raw'), await pipeline()] : await pipeline().then(async (p) => [await floor('raw'), p] as const)
    const pipelineTx = perSecond(pipelineRun.transactions, pipelineRun.ms)
    const floorTx = perSecond(floorRun.floor.transactions, floorRun.floor.ms)
    process.stdout.write(
      `${spec.label} round ${round + 1}: pipeline ${fmt(pipelineTx)} tx/s in ${fmt(pipelineRun.ms / 1000, 2)} s ` +
        `(totals ${pipelineRun.verification.equal ? 'equal to' : 'DIFFERENT from'} ground truth; transport settled at block batch ` +
        `${pipelineRun.transport.blockBatchSize ?? '?'}, ${pipelineRun.transport.concurrencyLimit ?? '?'} allowed in flight), ` +
        `floor ${fmt(floorTx)} tx/s, ratio ${ratio(pipelineTx / floorTx)}\n`,
    )
    const reference = referenceSweep ? await floorAt(referenceSweep, 'raw', false) : undefined
    if (reference) {
      const referenceTx = perSecond(reference.floor.transactions, reference.floor.ms)
      process.stdout.write(`${spec.label} round ${round + 1}: blocks-only reference ${fmt(referenceTx)} tx/s, ratio ${ratio(pipelineTx / referenceTx)}\n`)
    }
    process.stdout.write(
      `${spec.label} round ${round + 1}: node CPU s (process + modelled thread): daemon's backfill ${fmt(nodeSecondsOf(pipelineRun), 2)}, ` +
        `one pass of the floor ${fmt(floorRun.node.seconds, 2)}${floorRun.floor.receipts > 0 ? ` (${fmt(floorRun.floor.receipts)} receipts)` : ''}\n`,
    )
    process.stdout.write(`${spec.label} round ${round + 1}: daemon's requests: ${describeRequests(pipelineRun.rpc)}\n`)
    process.stdout.write(`${spec.label} round ${round + 1}: floor's requests: ${describeRequests(floorRun.node.requests)}\n`)
    const rpcClient = (await floor('indexer-rpc')).floor
    rounds.push({ floor: floorRun.floor, floorNode: floorRun.node, reference, rpcClient, pipeline: pipelineRun, ratio: pipelineTx / floorTx })
  }
  return summarise(spec, truth, sweep, rounds)
}

function summarise(spec: CaseSpec, truth: ChainTruth, sweep: Sweep, rounds: Round[]) {
  const transactions = truth.transactions
  const medianOf = (pick: (round: Round) => number) => median(rounds.map(pick))
  const pipelineTx = medianOf((r) => perSecond(r.pipeline.transactions, r.pipeline.ms))
  const floorTx = medianOf((r) => perSecond(r.floor.transactions, r.floor.ms))
  const rpcClientTx = medianOf((r) => perSecond(r.rpcClient.transactions, r.rpcClient.ms))
  const medianRatio = medianOf((r) => r.ratio)
  const reference = rounds[0]?.reference
    ? {
        txPerSecond: medianOf((r) => perSecond(r.reference!.floor.transactions, r.reference!.floor.ms)),
        ratio: medianOf((r) => perSecond(r.pipeline.transactions, r.pipeline.ms) / perSecond(r.reference!.floor.transactions, r.reference!.floor.ms)),
        point: { batchSize: rounds[0].reference.floor.batchSize, concurrency: rounds[0].reference.floor.concurrency },
        nodeSeconds: medianOf((r) => r.reference!.node.seconds),
      }
    : undefined
  /** What the node spent, s (its process's CPU plus a modelled thread's busy time): the daemon's backfill, one pass of the floor. */
  const nodeSeconds = {
    daemon: medianOf((r) => nodeSecondsOf(r.pipeline)),
    daemonProcess: medianOf((r) => r.pipeline.nodeCost.processCpuSeconds),
    floor: medianOf((r) => r.floorNode.seconds),
    floorProcess: medianOf((r) => r.floorNode.seconds - r.floorNode.modelledBusySeconds),
  }
  const settled = {
    blockBatchSize: medianOf((r) => r.pipeline.transport.blockBatchSize ?? Number.NaN),
    concurrencyLimit: medianOf((r) => r.pipeline.transport.concurrencyLimit ?? Number.NaN),
    inFlight: medianOf((r) => r.pipeline.transport.inFlight ?? Number.NaN),
  }
  const cpu: CpuSeconds = {
    daemon: medianOf((r) => r.pipeline.cpu.daemon),
    daemonMainThread: medianOf((r) => r.pipeline.cpu.daemonMainThread),
    daemonMainThreadWaited: medianOf((r) => r.pipeline.cpu.daemonMainThreadWaited),
    postgres: medianOf((r) => r.pipeline.cpu.postgres),
    node: medianOf((r) => r.pipeline.cpu.node),
    bench: medianOf((r) => r.pipeline.cpu.bench),
    windowSeconds: medianOf((r) => r.pipeline.cpu.windowSeconds),
  }
  // how busy a thread or the machine was over the window: the main thread near 100% is the indexer's wall
  const busy = (seconds: number) => `${fmt((100 * seconds) / cpu.windowSeconds)}%`
  const machineSeconds = cpu.daemon + cpu.postgres + cpu.node + cpu.bench
  const nodePerMillion = { daemon: perMillion(medianOf((r) => nodeSecondsOf(r.pipeline)), transactions), floor: perMillion(medianOf((r) => r.floorNode.seconds), transactions) }
  const floorClientCpu = medianOf((r) => r.floor.clientCpuSeconds)
  const peakRss = Math.max(...rounds.map((r) => r.pipeline.peakRssBytes))
  const allEqual = rounds.every((r) => r.pipeline.verification.equal)
  const modelled = spec.profile.name === 'serial' || spec.profile.name === 'growing'
  const microsPerRow = (seconds: number) => (truth.attributionRows > 0 ? fmt((seconds * 1e6) / truth.attributionRows, 1) : '—')
  printTable(
    `${spec.label}: ${fmt(transactions)} transactions, ${fmt(truth.attributionRows)} attribution rows, node profile ${spec.profile.name}, median of ${spec.reps}`,
    ['variant', 'tx/s', 'seconds', 'notes'],
    [
      [
        'pipeline on defaults (follower + workers + Postgres)',
        fmt(pipelineTx),
        fmt(medianOf((r) => r.pipeline.ms) / 1000, 2),
        `settled at block batch ${settled.blockBatchSize}, ${settled.concurrencyLimit} allowed / ${settled.inFlight} in flight; peak RSS ${fmt(peakRss / MiB)} MiB`,
      ],
      [
        `floor: raw HTTP client + JSON.parse${spec.receipts ? ' (blocks + block receipts)' : " (blocks + the candidates' receipts)"} at its best point`,
        fmt(floorTx),
        fmt(medianOf((r) => r.floor.ms) / 1000, 2),
        `batch ${sweep.batchSize}, ${sweep.concurrency} in flight${rounds[0]?.floor.receipts ? `; ${fmt(rounds[0].floor.receipts)} receipts, ${sweep.receiptBatchSize} a request` : ''}`,
      ],
      ...(reference
        ? [['reference: the same client, blocks only, at its own best point', fmt(reference.txPerSecond), '', `batch ${reference.point.batchSize}, ${reference.point.concurrency} in flight; pipeline / it ${ratio(reference.ratio)}`]]
        : []),
      ["same blocks through the indexer's RPC client (diagnostic)", fmt(rpcClientTx), fmt(medianOf((r) => r.rpcClient.ms) / 1000, 2), 'transport + scanner, no receipts, queue or database'],
      ['ratio pipeline / floor (median of per-round ratios)', ratio(medianRatio), '', rounds.map((r) => ratio(r.ratio)).join(' ')],
    ],
  )
  printTable(
    `${spec.label}: where the CPU went during the pipeline's measured window (medians)`,
    ['process', 'CPU s', 'per 1M tx', 'µs per attribution row', 'busy in the window'],
    [
      ['daemon (indexer)', fmt(cpu.daemon, 2), fmt(perMillion(cpu.daemon, transactions), 2), microsPerRow(cpu.daemon), busy(cpu.daemon)],
      ["  of which its main thread (JavaScript's one)", fmt(cpu.daemonMainThread, 2), fmt(perMillion(cpu.daemonMainThread, transactions), 2), microsPerRow(cpu.daemonMainThread), busy(cpu.daemonMainThread)],
      ['  its main thread ready to run, waiting for a core', fmt(cpu.daemonMainThreadWaited, 2), '', '', busy(cpu.daemonMainThreadWaited)],
      ['PostgreSQL backends of its database', fmt(cpu.postgres, 2), fmt(perMillion(cpu.postgres, transactions), 2), microsPerRow(cpu.postgres)],
      ['replay node process', fmt(cpu.node, 2), fmt(perMillion(cpu.node, transactions), 2), microsPerRow(cpu.node)],
      ['bench (progress polls)', fmt(cpu.bench, 2), fmt(perMillion(cpu.bench, transactions), 2), microsPerRow(cpu.bench)],
      [`all of them, of the machine's ${availableParallelism()} cores`, fmt(machineSeconds, 2), '', '', `${fmt((100 * machineSeconds) / cpu.windowSeconds / availableParallelism())}%`],
      ["the floor's client (this process, its run: requests and JSON.parse)", fmt(floorClientCpu, 2), fmt(perMillion(floorClientCpu, transactions), 2), microsPerRow(floorClientCpu)],
      [`node cost, daemon's backfill (process CPU${modelled ? ' + modelled thread' : ''})`, fmt(nodeSeconds.daemon, 2), fmt(nodePerMillion.daemon, 2), '', modelled ? `process ${fmt(nodeSeconds.daemonProcess, 2)}` : ''],
      [`node cost, one pass of the floor (process CPU${modelled ? ' + modelled thread' : ''})`, fmt(nodeSeconds.floor, 2), fmt(nodePerMillion.floor, 2), '', modelled ? `process ${fmt(nodeSeconds.floorProcess, 2)}` : ''],
      ...(reference ? [['node cost, one pass of the blocks-only reference', fmt(reference.nodeSeconds, 2), fmt(perMillion(reference.nodeSeconds, transactions), 2), '', '']] : []),
    ],
  )
  // a backfill that indexes wrong totals is broken, whatever its speed: the bench fails
  if (!allEqual) throw new Error(`${spec.label}: totals DIFFERENT from the ground truth: ${rounds.find((r) => !r.pipeline.verification.equal)!.pipeline.verification.mismatches.join('; ')}`)
  return {
    label: spec.label,
    profile: spec.profile,
    transactions,
    attributionRows: truth.attributionRows,
    pipelineTxPerSecond: pipelineTx,
    floorTxPerSecond: floorTx,
    // receiptBatchSize: the candidates' receipts per request (sparse chains); null when the floor asks none
    floorPoint: { batchSize: sweep.batchSize, concurrency: sweep.concurrency, receiptBatchSize: spec.receipts ? null : sweep.receiptBatchSize, receipts: spec.receipts },
    sweep,
    indexerRpcClientTxPerSecond: rpcClientTx,
    ratio: medianRatio,
    ratios: rounds.map((r) => r.ratio),
    settled,
    cpuSeconds: cpu,
    nodeCpuSecondsPerMillionTx: nodePerMillion,
    nodeSeconds,
    reference,
    peakRssMiB: peakRss / MiB,
    verified: allEqual,
    rounds: rounds.map((r) => ({
      pipelineMs: r.pipeline.ms,
      floorMs: r.floor.ms,
      floorRefused: r.floor.refused,
      rpcClientMs: r.rpcClient.ms,
      ratio: r.ratio,
      transport: r.pipeline.transport,
      rpc: r.pipeline.rpc,
      cpu: r.pipeline.cpu,
      nodeCost: r.pipeline.nodeCost,
      floorNode: r.floorNode,
      floorReceipts: r.floor.receipts,
      reference: r.reference && { ms: r.reference.floor.ms, node: r.reference.node },
      profileWindow: r.pipeline.profileWindow,
    })),
  }
}

export type CaseResult = Awaited<ReturnType<typeof measureCase>>
