import { Attribution } from 'ox/erc8021'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { calldataGas } from '../../src/attribution/gas.js'
import { startAnvil, type Anvil } from '../../devnet/anvil.js'
import { createDevnetClient } from '../../devnet/client.js'
import { anvilChain, indexThrough, totalsFromIndex } from '../support/indexer.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'

let anvil: Anvil
let database: TestDatabase
let redis: TestRedis

beforeAll(async () => {
  ;[anvil, database, redis] = await Promise.all([startAnvil(), createTestDatabase('smoke'), createTestRedis()])
})

afterAll(async () => {
  await anvil?.stop()
  await database?.drop()
  await redis?.cleanup()
})

it('indexes attributed plain transactions sent to anvil', async () => {
  const client = createDevnetClient({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId })
  const [from] = await client.getAddresses()
  const suffix = Attribution.toDataSuffix({ codes: ['smoke', 'two'] })
  for (let i = 0; i < 12; i++) {
    await client.sendTransaction({ account: from!, to: from!, data: i % 3 === 0 ? `0xdeadbeef${suffix.slice(2)}` : '0xdeadbeef', chain: null })
  }
  const head = Number(await client.getBlockNumber())
  await indexThrough({ database, redis, chains: [anvilChain(anvil.rpcUrl)], chainId: anvil.chainId, head })
  const expected = { transactions: 4, userOperations: 0, reverted: 0, suffixGas: 4 * calldataGas(suffix) }
  expect(await totalsFromIndex(database.db)).toEqual({ smoke: expected, two: expected })
})
