import type { Hex } from 'viem'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { appendTruth, emptyTruth, type GroundTruth } from '../../devnet/ledger.js'
import { createRandom } from '../../devnet/random.js'
import { sendDevnetTransaction, transferGas } from '../../devnet/send.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { startTestIndexer, indexerEnv, waitForIndexed } from '../support/indexer.js'
import { chainTransactionCount, compareWithTruth } from './support/ground-truth.js'
import { createFaultReport } from './support/report.js'
import { faultSeed, knobs } from './support/scale.js'
import { createTrialDatabase, startPrivateServices, type PrivateServices, type TrialDatabase } from './support/services.js'
import { hostileShape, suffixGasOf, type HostileShape } from './support/suffix-fuzz.js'

/**
 * 10. Hostile suffixes (issue 20.1): in every block, 1-3 transactions whose
 * suffix is shaped to cost (codes of up to 5 KB, up to 3,000 codes, schemas
 * 0/1/2, garbage before and after the marker, random bytes ending in it)
 * beside the mixed honest traffic (schemas 0/1/2, bundles on every
 * EntryPoint, reverts), indexed live with no confirmations and ranges of 3
 * blocks. Before the limits one long code failed its range's commit for good.
 */

let services: PrivateServices
let chain: TestChain
let database: TrialDatabase

const report = createFaultReport({
  fault: '10-hostile-suffixes',
  title: '10. Hostile suffixes beside honest traffic',
  checked:
    'per block 1-3 hostile transactions (codes of 1 B-5 KB, 1-3,000 codes, schemas 0/1/2, garbage before/after the marker, random bytes ending in it) ' +
    'mined with the mixed honest traffic, indexed live (in-process follower + workers, ranges of 3 blocks); rows, per-code totals and malformed ' +
    'suffixes equal the truth (hostile codes in their bounded form, over-limit suffixes malformed), no range pending, every block once, ' +
    'no stored code over 64 bytes, no reason over 200 characters',
  testFile: 'test/faults/hostile-suffixes.test.ts',
})

beforeAll(async () => {
  ;[services, chain] = await Promise.all([startPrivateServices(), startTestChain({ seed: faultSeed })])
  database = await createTrialDatabase(services.postgres, 'hostile_suffixes')
}, 300_000)

afterAll(async () => {
  await database?.drop()
  await chain?.stop()
  await services?.stop()
})

/** The truth of one mined hostile transaction. */
function truthOf(shape: HostileShape, hash: Hex, blockNumber: number, chainId: number): GroundTruth {
  const truth = emptyTruth()
  if (shape.codes === undefined) truth.malformed.push({ txHash: hash, userOpIndex: -1 })
  else if (shape.codes.length === 0) truth.unattributedTxHashes.push(hash)
  else {
    const suffixGas = suffixGasOf(shape.suffix)
    for (const code of shape.codes) {
      truth.attributions.push({ chainId, blockNumber, txHash: hash, kind: 'transaction', userOpIndex: -1, code, status: 'success', schemaId: shape.schemaId, suffixGas })
    }
  }
  return truth
}

it(`${knobs.hostileSuffixBlocks} blocks with hostile suffixes: no range stuck, the index exact`, async () => {
  const started = Date.now()
  const random = createRandom(faultSeed + 10)
  const indexer = await startTestIndexer({
    db: database.db,
    env: indexerEnv({ databaseUrl: database.url, redisUrl: services.redis.url, prefix: 'hostile_suffixes', extra: { RANGE_SIZE: '3', LOG_LEVEL: 'warn' } }),
    chains: [chain.config],
  })
  const truth = emptyTruth()
  const shapes: Record<string, number> = {}
  try {
    const attacker = chain.wallets.deployer
    for (let block = 0; block < knobs.hostileSuffixBlocks; block++) {
      await chain.client.setAutomine(false)
      const sent: Array<{ shape: HostileShape; hash: Hex }> = []
      for (let i = random.between(1, 3); i > 0; i--) {
        const shape = hostileShape(random)
        const verdict = shape.codes === undefined ? 'malformed' : shape.codes.length === 0 ? 'none' : 'attributed'
        shapes[`${shape.name}: ${verdict}`] = (shapes[`${shape.name}: ${verdict}`] ?? 0) + 1
        const hash = await sendDevnetTransaction(chain.client, { from: attacker, to: attacker.address, data: shape.calldata, gas: transferGas((shape.calldata.length - 2) / 2) })
        sent.push({ shape, hash })
      }
      // the honest batch is mined in the same block as the hostile transactions still pending
      appendTruth(truth, await sendMixedTraffic(chain, { transactions: 6, blocks: 1 }))
      for (const { shape, hash } of sent) {
        const receipt = await chain.client.getTransactionReceipt({ hash })
        expect(receipt.status).toBe('success')
        appendTruth(truth, truthOf(shape, hash, Number(receipt.blockNumber), chain.chainId))
      }
    }
    await chain.client.setAutomine(true)
    const head = Number(await chain.client.getBlockNumber())
    await waitForIndexed(database.db, chain.chainId, head, 300_000)
    const comparison = await compareWithTruth({ db: database.db, chainId: chain.chainId, truth, head, chainTransactions: await chainTransactionCount(chain.rpcUrl, head) })
    const [stored] = await database.db.$client<{ code: number | null; reason: number | null }[]>`
      select (select max(octet_length(code)) from attributions)::int as code, (select max(length(reason)) from malformed_suffixes)::int as reason`
    report.record({
      trial: 1,
      lost: comparison.lost,
      doubled: comparison.doubled,
      inputs: Object.values(shapes).reduce((sum, count) => sum + count, 0),
      ok: comparison.exact && (stored!.code ?? 0) <= 64 && (stored!.reason ?? 0) <= 200,
      durationMs: Date.now() - started,
      details: { shapes, longestStoredCode: stored!.code, longestReason: stored!.reason, ...comparison },
    })
    expect(comparison.differences).toEqual([])
    expect(comparison.exact).toBe(true)
    expect(stored!.code).toBeLessThanOrEqual(64)
    expect(stored!.reason).toBeLessThanOrEqual(200)
    // the mix really reached every verdict
    expect(Object.keys(shapes).some((name) => name.endsWith('malformed'))).toBe(true)
    expect(Object.keys(shapes).some((name) => name.endsWith('attributed'))).toBe(true)
  } finally {
    await indexer.stop()
  }
})
