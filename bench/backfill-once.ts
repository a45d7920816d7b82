/**
 * One backfill of a cached bench chain, for experiments: the pipeline on its
 * defaults (or with `KEY=VALUE` overrides), then the plain floor once, and
 * the CPU seconds each kind of process spent during the pipeline's run.
 *
 *   npx tsx bench/backfill-once.ts [--blocks 5000] [--tx 200] [--profile dir] [--no-floor] [KEY=VALUE…]
 */
import { readdirSync, readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { measureFloor } from './chain/floor.js'
import { serveChain } from './lib/chain-setup.js'
import { runBackfill } from './lib/pipeline-run.js'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    blocks: { type: 'string', default: '5000' },
    tx: { type: 'string', default: '200' },
    profile: { type: 'string' },
    'no-floor': { type: 'boolean', default: false },
    batch: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '4' },
  },
})
const env = Object.fromEntries(positionals.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]))

function processLabel(pid: string): string {
  const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
  const script = args.find((arg) => /\.(ts|mjs|js)$/.test(arg) && !arg.includes('tsx'))
  return script?.split('/').at(-1) ?? pid
}

/** CPU seconds (user + system) of every live process, by command name. */
function cpuByCommand(): Map<string, number> {
  const ticks = 100
  const totals = new Map<string, number>()
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const close = stat.lastIndexOf(')')
      const name = stat.slice(stat.indexOf('(') + 1, close)
      const fields = stat.slice(close + 2).split(' ')
      const seconds = (Number(fields[11]) + Number(fields[12])) / ticks
      const key = name.startsWith('postgres') ? 'postgres' : name === 'node' ? `node ${processLabel(pid)}` : name
      totals.set(key, (totals.get(key) ?? 0) + seconds)
    } catch {
      // gone
    }
  }
  return totals
}

const served = await serveChain({ blocks: Number(values.blocks), txPerBlock: Number(values.tx) })
const truth = served.chain.truth()
try {
  let before: Map<string, number> | undefined
  let after: Map<string, number> | undefined
  const run = await runBackfill({
    label: 'once',
    replay: served.replay,
    truth,
    settings: { pollIntervalMs: 100, env },
    timeoutMs: 900_000,
    sampleEveryMs: 200,
    ...(values.profile && { cpuProfileDir: values.profile }),
    onSample: (sample) => {
      if (process.env.TIMELINE) process.stdout.write(`${sample.atMs} ${sample.through}\n`)
      before ??= cpuByCommand()
      if (sample.through >= truth.lastBlock) after = cpuByCommand()
    },
  })
  const cpu = [...(after ?? new Map()).entries()]
    .map(([name, seconds]) => [name, seconds - (before?.get(name) ?? 0)] as const)
    .filter(([, seconds]) => seconds > 0.05)
    .sort((a, b) => b[1] - a[1])
  process.stdout.write(
    `pipeline ${Math.round((run.transactions / run.ms) * 1000)} tx/s in ${(run.ms / 1000).toFixed(2)} s, ` +
      `totals ${run.verification.equal ? 'equal' : `DIFFERENT ${run.verification.mismatches.join('; ')}`}, ` +
      `batch ${run.transport.blockBatchSize}, in flight ${run.transport.concurrencyLimit}, peak RSS ${Math.round(run.peakRssBytes / 2 ** 20)} MiB\n` +
      `profile window ${run.profileWindow}\ncpu s during the run: ${cpu.map(([name, seconds]) => `${name} ${seconds.toFixed(2)}`).join(', ')}\n`,
  )
  if (!values['no-floor']) {
    await served.replay.release({ head: truth.lastBlock })
    const floor = await measureFloor({ url: served.replay.url, from: 1, to: truth.lastBlock, batchSize: Number(values.batch), concurrency: Number(values.concurrency) })
    const floorTx = (floor.transactions / floor.ms) * 1000
    process.stdout.write(`floor ${Math.round(floorTx)} tx/s in ${(floor.ms / 1000).toFixed(2)} s; ratio ${((run.transactions / run.ms) * 1000 / floorTx).toFixed(2)}\n`)
  }
} finally {
  await served.close()
}
