import { Attribution } from 'ox/erc8021'
import type { Hex } from 'viem'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { calldataGas } from '../../src/attribution/gas.js'
import { indexedThrough } from '../../src/store/ranges.js'
import { startAnvil, type Anvil } from '../../devnet/anvil.js'
import { createDevnetClient } from '../../devnet/client.js'
import { freePort } from '../../devnet/free-port.js'
import { anvilChain, indexerEnv, startTestIndexer, totalsFromIndex, type CodeTotals } from '../support/indexer.js'
import { until } from '../support/poll.js'
import { chainsEnv, spawnRole, type RoleProcess } from '../support/processes.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

/**
 * A candidate transaction can emit as many logs as its gas pays for, and the
 * index needs none of a plain transaction's logs (its receipt gives its
 * status). Here every block holds one call, with an ERC-8021 suffix, to a
 * contract that emits 15,000 empty logs (6.1M gas; a 5.4 MB receipt), and
 * the chain is one range of 80 blocks: 78 such receipts, 1.17M logs, 420 MB
 * of JSON. Even blocks also hold an honest suffix transaction (every
 * transaction a candidate: the worker reads them with eth_getBlockReceipts
 * on anvil), odd ones two plain transfers (eth_getTransactionReceipt), so
 * both ways of reading receipts meet the logs.
 *
 * Measured on this chain: a worker that holds its candidates' receipts
 * parsed whole until the range's rows are built keeps ~386 bytes of heap
 * per log, ~430 MiB for the range (it runs in 512 MiB, 478 MiB in use at
 * most): 3.4 times the worker's heap here (--max-old-space-size=128), so it
 * dies "JavaScript heap out of memory", and would on every retry. The
 * worker's own baseline, the same 80 blocks with one log a call, is ~55 MiB
 * in use: it runs in 56 MiB and dies at start-up in 48. A worker that
 * reduces each receipt as it is read indexed this chain in 64 MiB.
 */

const LOGS_PER_CALL = 15_000
const RANGE_SIZE = 80
/** Blocks 2 to 79 (block 1 deploys the contract): the whole chain is the one range 0-79. */
const BLOCKS = RANGE_SIZE - 2
const WORKER_HEAP_MB = 128
/** One loop of the runtime below: LOG0 (375) and 32 of stack, counter and jump. */
const GAS_PER_LOG = 407

const hex = (value: number, bytes: number) => value.toString(16).padStart(bytes * 2, '0')

/** Every call emits LOGS_PER_CALL empty logs and stops; its calldata is never read. */
const runtime =
  '62' + hex(LOGS_PER_CALL, 3) + // PUSH3 N      [n]             logs still to emit
  '5b' + //                         JUMPDEST     [n]             offset 4: the loop
  '6000' + //                       PUSH1 0      [n, 0]
  '80' + //                         DUP1         [n, 0, 0]
  'a0' + //                         LOG0         [n]             log0(offset 0, size 0): no data, no topic
  '6001' + //                       PUSH1 1      [n, 1]
  '90' + //                         SWAP1        [1, n]
  '03' + //                         SUB          [n-1]           top minus the one below
  '80' + //                         DUP1         [n-1, n-1]
  '6004' + //                       PUSH1 4      [n-1, n-1, 4]
  '57' + //                         JUMPI        [n-1]           back to offset 4 while n-1 != 0
  '00' //                           STOP
/** Copies the runtime (right after these 11 bytes) to memory and returns it as the contract's code. */
const initCode =
  '60' + hex(runtime.length / 2, 1) + // PUSH1 size   [size]
  '80' + //                              DUP1         [size, size]
  '600b' + //                            PUSH1 11     [size, size, 11]     where the runtime starts in this code
  '6000' + //                            PUSH1 0      [size, size, 11, 0]
  '39' + //                              CODECOPY     [size]               memory[0, size) = code[11, 11 + size)
  '6000' + //                            PUSH1 0      [size, 0]
  'f3' //                                RETURN                            memory[0, size) is the contract's code

let anvil: Anvil
let database: TestDatabase
let redis: TestRedis
/** JSON-RPC calls anvil served, by method, from its log (which way the worker read receipts). */
const anvilCalls: Record<string, number> = {}

beforeAll(async () => {
  ;[anvil, database, redis] = await Promise.all([startAnvil(), createTestDatabase('log_heavy'), createTestRedis()])
  anvil.process.stdout!.on('data', (chunk: Buffer) => {
    for (const [, method] of chunk.toString('utf8').matchAll(/^(eth_\w+)$/gm)) anvilCalls[method!] = (anvilCalls[method!] ?? 0) + 1
  })
})

afterAll(async () => {
  await anvil?.stop()
  await database?.drop()
  await redis?.cleanup()
})

/** The worker's V8 heap in use, from its /metrics; undefined when it does not answer. */
async function heapInUse(metricsUrl: string): Promise<number | undefined> {
  try {
    const text = await (await fetch(metricsUrl, { signal: AbortSignal.timeout(1_000) })).text()
    const match = /^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)
    return match ? Number(match[1]) : undefined
  } catch {
    return undefined
  }
}

it('candidates whose receipts hold 15,000 logs each: a worker on a 128 MiB heap indexes the range, totals exact', async () => {
  const client = createDevnetClient({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId })
  const [sender] = await client.getAddresses()
  const deployment = await client.sendTransaction({ account: sender!, data: `0x${initCode}${runtime}`, chain: null })
  const { contractAddress } = await client.waitForTransactionReceipt({ hash: deployment })
  expect(await client.getCode({ address: contractAddress! })).toBe(`0x${runtime}`)

  const heavy = Attribution.toDataSuffix({ codes: ['logs_app'] })
  const honest = Attribution.toDataSuffix({ codes: ['honest_app'] })
  const expected: Record<string, CodeTotals> = {
    logs_app: { transactions: 0, userOperations: 0, reverted: 0, suffixGas: 0 },
    honest_app: { transactions: 0, userOperations: 0, reverted: 0, suffixGas: 0 },
  }
  let firstHeavy: Hex | undefined
  await client.setAutomine(false)
  for (let n = 0; n < BLOCKS; n++) {
    // gas given: no estimate (a second run of the call), and enough for every log
    const hash = await client.sendTransaction({
      account: sender!,
      to: contractAddress!,
      data: `0x12345678${heavy.slice(2)}`,
      gas: BigInt(LOGS_PER_CALL * GAS_PER_LOG + 100_000),
      chain: null,
    })
    firstHeavy ??= hash
    expected.logs_app!.transactions++
    expected.logs_app!.suffixGas += calldataGas(heavy)
    if (n % 2 === 0) {
      await client.sendTransaction({ account: sender!, to: sender!, data: `0xa9059cbb${honest.slice(2)}`, chain: null })
      expected.honest_app!.transactions++
      expected.honest_app!.suffixGas += calldataGas(honest)
    } else {
      for (let i = 0; i < 2; i++) await client.sendTransaction({ account: sender!, to: sender!, value: 0n, chain: null })
    }
    await client.mine({ blocks: 1 })
  }
  await client.setAutomine(true)
  const head = Number(await client.getBlockNumber())
  expect(head).toBe(RANGE_SIZE - 1)

  // one such receipt, read raw (viem refuses answers over 10 MiB): it succeeded, with every log
  const answer = await fetch(anvil.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionReceipt', params: [firstHeavy] }),
  })
  const receipt = ((await answer.json()) as { result: { status: Hex; logs: unknown[] } }).result
  expect(receipt.status).toBe('0x1')
  expect(receipt.logs).toHaveLength(LOGS_PER_CALL)

  const env = indexerEnv({ databaseUrl: database.url, redisUrl: redis.url, prefix: redis.prefix, extra: { RANGE_SIZE: String(RANGE_SIZE) } })
  const chain = anvilChain(anvil.rpcUrl)
  // the follower here, the worker as operators run it: its own process, on a small heap
  const follower = await startTestIndexer({ db: database.db, env, chains: [chain], roles: { follower: true, worker: false } })
  const metricsPort = await freePort()
  let worker: RoleProcess | undefined
  try {
    worker = spawnRole('worker', {
      ...env,
      CHAINS: chainsEnv([chain]),
      LOG_LEVEL: 'warn',
      METRICS_PORT: String(metricsPort),
      NODE_OPTIONS: [process.env.NODE_OPTIONS, `--max-old-space-size=${WORKER_HEAP_MB}`].filter(Boolean).join(' '),
    })
    const running = worker
    let peakHeap = 0
    const through = async () => (await indexedThrough(database.db.$client, anvil.chainId)) ?? -1
    const state = async () =>
      `indexed through ${await through()} of ${head}, worker heap in use seen at most ${Math.round(peakHeap / 2 ** 20)} MiB, anvil served ${JSON.stringify(anvilCalls)}`
    const dead = () => running.child.exitCode !== null || running.child.signalCode !== null
    await until(
      `chain ${anvil.chainId} indexed through ${head}`,
      async () => {
        peakHeap = Math.max(peakHeap, (await heapInUse(`http://127.0.0.1:${metricsPort}/metrics`)) ?? 0)
        if (dead()) {
          const how = running.child.signalCode ?? `code ${running.child.exitCode}`
          throw new Error(`the worker exited (${how}); ${await state()}; its last lines:\n${running.output()}`)
        }
        return (await through()) >= head
      },
      { timeoutMs: 60_000, intervalMs: 100, describe: state },
    )
    expect(await totalsFromIndex(database.db)).toEqual(expected)
    // still running: the range did not take the worker with it
    expect(dead(), running.output()).toBe(false)
  } finally {
    await worker?.kill('SIGTERM')
    await follower.stop()
  }
}, 120_000)
