/**
 * Backfill rate of the indexer against the local devnet (anvil with
 * EntryPoint 0.6/0.7/0.8 and the generated traffic mix): the figure a
 * newcomer sees with `npm start`, not a throughput benchmark — anvil serves
 * full blocks far slower than a production node (see the backfill bench for
 * the pipeline against a replay server).
 *
 *   npx tsx bench/devnet-backfill.ts [transactions=6000] [blocks=300]
 *
 * Starts its own anvil, sends the traffic, then runs `attribution start` as
 * an operator would (fresh database and queue prefix) and times it from its
 * first indexed block to the head, sampling RSS; checks the totals against
 * the traffic's ground truth at the end.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { totalsByCode } from '../devnet/ledger.js'
import { sendMixedTraffic, startTestChain } from '../test/support/chain.js'
import { createBenchDatabase, createProgressReader, deleteRedisPrefix, startIndexerProcess, uniqueName } from './lib/indexer.js'

const TRANSACTIONS = Number(process.argv[2] ?? 6_000)
const BLOCKS = Number(process.argv[3] ?? 300)

async function main() {
  const chain = await startTestChain()
  const database = await createBenchDatabase('bench_devnet')
  const prefix = uniqueName('bench_devnet')
  try {
    const sent = performance.now()
    const truth = await sendMixedTraffic(chain, { transactions: TRANSACTIONS, blocks: BLOCKS })
    const head = Number(await chain.client.getBlockNumber())
    process.stdout.write(`devnet: ${TRANSACTIONS} transactions over ${head + 1} blocks sent in ${((performance.now() - sent) / 1000).toFixed(1)} s\n`)

    const indexer = await startIndexerProcess({
      rpcUrl: chain.rpcUrl,
      chainId: chain.chainId,
      databaseUrl: database.url,
      queuePrefix: prefix,
      workerConcurrency: 4,
      rangeSize: 20,
      rpcBatchSize: 20,
      pollIntervalMs: 100,
      label: 'devnet-backfill',
    })
    try {
      const indexedThrough = createProgressReader(database.sql, chain.chainId)
      while ((await indexedThrough()) < 0) await sleep(10)
      const started = performance.now()
      let peakRss = 0
      for (;;) {
        peakRss = Math.max(peakRss, indexer.memory()?.rss ?? 0)
        if ((await indexedThrough()) >= head) break
        if (indexer.exited()) throw new Error(`indexer exited:\n${indexer.tail()}`)
        await sleep(25)
      }
      const seconds = (performance.now() - started) / 1000
      const rows = await database.sql<{ code: string; kind: string; success: string; reverted: string }[]>`
        select code, kind, sum(success_count) as success, sum(reverted_count) as reverted from code_daily_totals group by code, kind`
      const expected = totalsByCode(truth)
      const equal = Object.entries(expected).every(([code, totals]) => {
        const of = (kind: string) => rows.find((row) => row.code === code && row.kind === kind)
        const reverted = Number(of('transaction')?.reverted ?? 0) + Number(of('userOperation')?.reverted ?? 0)
        return Number(of('transaction')?.success ?? 0) === totals.transactions && Number(of('userOperation')?.success ?? 0) === totals.userOperations && reverted === totals.reverted
      })
      process.stdout.write(
        `devnet backfill: ${head} blocks, ${TRANSACTIONS} generated transactions in ${seconds.toFixed(2)} s: ` +
          `${(head / seconds).toFixed(0)} blocks/s, ${(TRANSACTIONS / seconds).toFixed(0)} tx/s, peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB, ` +
          `totals ${equal ? 'equal to' : 'DIFFERENT from'} the ground truth\n`,
      )
      if (!equal) process.exitCode = 1
    } finally {
      await indexer.stop()
    }
  } finally {
    await chain.stop()
    await database.drop()
    await deleteRedisPrefix(prefix)
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`)
  process.exit(1)
})
