import { Attribution } from 'ox/erc8021'
import type { Hex } from 'viem'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { calldataGas } from '../../src/attribution/gas.js'
import { boundedCode } from '../../src/attribution/limits.js'
import { removeAttributionsAbove } from '../../src/store/commit.js'
import { startAnvil, type Anvil } from '../../devnet/anvil.js'
import { createDevnetClient } from '../../devnet/client.js'
import { anvilChain, indexThrough, malformedFromIndex, totalsFromIndex, type CodeTotals } from '../support/indexer.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

/**
 * Issue 20.1: one hostile transaction in every block, beside honest ones.
 * Before the limits (src/attribution/limits.ts) the 4 KB code failed the
 * commit on its btree key and the range never committed; 3,000 codes cost
 * a row each, every row carrying the whole list and suffix.
 */

let anvil: Anvil
let database: TestDatabase
let redis: TestRedis

beforeAll(async () => {
  ;[anvil, database, redis] = await Promise.all([startAnvil(), createTestDatabase('hostile_suffixes'), createTestRedis()])
})

afterAll(async () => {
  await anvil?.stop()
  await database?.drop()
  await redis?.cleanup()
})

type Hostile = { suffix: Hex; counted?: string[] }

/** The hostile suffix of block `n`: each shape in turn. `counted` is what the index must count it as (absent: malformed). */
function hostileSuffix(n: number): Hostile {
  const tag = n.toString().padStart(3, '0')
  switch (n % 5) {
    case 0: {
      // 4 KB of one code: fits the 4096-byte suffix, so it counts, as an invalid code in its bounded form
      const code = `long${tag}${'x'.repeat(4000)}`
      return { suffix: Attribution.toDataSuffix({ appCode: code }), counted: [boundedCode(code)] }
    }
    case 1: // 4.5 KB of one code: past the suffix limit
      return { suffix: Attribution.toDataSuffix({ appCode: `huge${tag}${'x'.repeat(4500)}` }) }
    case 2: // 3,000 distinct codes, 25 KB of calldata
      return { suffix: Attribution.toDataSuffix({ appCode: 'honest_app', serviceCodes: Array.from({ length: 3000 }, (_, i) => `c${tag}_${i}`) }) }
    case 3: {
      // schema 0's longest code, 250 bytes, beside an honest one
      const code = `s0${tag}${'y'.repeat(245)}`
      return { suffix: Attribution.toDataSuffix({ codes: [code] }), counted: [boundedCode(code)] }
    }
    default: // 33 short codes in a short suffix
      return { suffix: Attribution.toDataSuffix({ codes: Array.from({ length: 33 }, (_, i) => `k${i}`) }) }
  }
}

function add(totals: Record<string, CodeTotals>, code: string, suffix: Hex) {
  const entry = (totals[code] ??= { transactions: 0, userOperations: 0, reverted: 0, suffixGas: 0 })
  entry.transactions++
  entry.suffixGas += calldataGas(suffix)
}

it('one hostile transaction per block: every range commits, honest totals exact, hostile ones bounded', async () => {
  const client = createDevnetClient({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId })
  const [honest, attacker] = await client.getAddresses()
  await client.setAutomine(false)
  const expected: Record<string, CodeTotals> = {}
  const malformed: string[] = []
  const hostileHashes: Hex[] = []
  const blocks = 10
  for (let n = 0; n < blocks; n++) {
    for (let i = 0; i < 2; i++) {
      const suffix = Attribution.toDataSuffix({ codes: ['honest_app', `app_${(n + i) % 3}`] })
      await client.sendTransaction({ account: honest!, to: honest!, data: `0xdeadbeef${suffix.slice(2)}`, chain: null })
      add(expected, 'honest_app', suffix)
      add(expected, `app_${(n + i) % 3}`, suffix)
    }
    const hostile = hostileSuffix(n)
    const hash = await client.sendTransaction({ account: attacker!, to: attacker!, data: `0xa9059cbb${hostile.suffix.slice(2)}`, chain: null, gas: 2_000_000n })
    hostileHashes.push(hash)
    if (hostile.counted) for (const code of hostile.counted) add(expected, code, hostile.suffix)
    else malformed.push(`${hash}:-1`)
    await client.mine({ blocks: 1 })
  }
  for (const hash of hostileHashes) expect((await client.getTransactionReceipt({ hash })).status).toBe('success')
  const head = Number(await client.getBlockNumber())

  await indexThrough({ database, redis, chains: [anvilChain(anvil.rpcUrl)], chainId: anvil.chainId, head })

  expect(await totalsFromIndex(database.db)).toEqual(expected)
  expect(await malformedFromIndex(database.db, anvil.chainId)).toEqual(malformed.sort())
  const sql = database.db.$client
  const [stuck] = await sql<{ pending: number }[]>`select count(*)::int as pending from ranges where status <> 'done'`
  expect(stuck!.pending).toBe(0)
  // what one hostile transaction may store: a code of at most 64 bytes, a reason of at most 200 characters
  const [longest] = await sql<{ code: number; reason: number }[]>`
    select (select max(octet_length(code)) from attributions)::int as code, (select max(length(reason)) from malformed_suffixes)::int as reason`
  expect(longest!.code).toBeLessThanOrEqual(64)
  expect(longest!.reason).toBeLessThanOrEqual(200)
  // each attributed transaction's suffix is stored once, beside its rows; a rollback takes both away
  const suffixesMatchRows = async () => {
    const [counts] = await sql<{ suffixes: number; units: number; orphans: number }[]>`
      select (select count(*) from attribution_suffixes)::int as suffixes,
        (select count(*) from (select distinct chain_id, tx_hash, user_op_index from attributions) u)::int as units,
        (select count(*) from attribution_suffixes s where not exists (select 1 from attributions a
          where a.chain_id = s.chain_id and a.tx_hash = s.tx_hash and a.user_op_index = s.user_op_index))::int as orphans`
    return counts!
  }
  const before = await suffixesMatchRows()
  expect(before).toEqual({ suffixes: before.units, units: 2 * blocks + 4, orphans: 0 })
  await sql.begin((tx) => removeAttributionsAbove(tx, anvil.chainId, head - 5))
  const after = await suffixesMatchRows()
  expect(after.orphans).toBe(0)
  expect(after.suffixes).toBe(after.units)
  expect(after.units).toBeLessThan(before.units)
})
