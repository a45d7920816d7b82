import { openChain, type Chain } from '../chain/files.js'
import { defaultChainParams, ensureChain, type ChainParams } from '../chain/generate.js'
import { startReplayProcess, type ReplayProcess } from '../chain/replay-process.js'

/** Generates (or reuses from bench/.cache) a chain and starts its replay server in its own process. */
export async function serveChain(params: Partial<ChainParams> & { blocks: number }, release: { head?: number; rate?: number } = {}) {
  const started = performance.now()
  const dir = ensureChain({ ...defaultChainParams, ...params }, (line) => process.stdout.write(`${line}\n`))
  const chain: Chain = openChain(dir)
  const replay: ReplayProcess = await startReplayProcess({ dir, ...release })
  process.stdout.write(
    `chain: ${chain.lastBlock} blocks, ${chain.meta.transactions.toLocaleString('en-US')} transactions, ` +
      `${Math.round(chain.meta.fullBytes / 2 ** 20)} MiB of block JSON, ready in ${((performance.now() - started) / 1000).toFixed(1)} s, ` +
      `replay server ${replay.url} (pid ${replay.pid})\n`,
  )
  return {
    chain,
    replay,
    async close() {
      await replay.stop()
      chain.close()
    },
  }
}
