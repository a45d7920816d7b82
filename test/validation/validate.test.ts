import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { getAddress, type Address, type Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GroundTruth } from '../../devnet/ledger.js'
import { suffixGasOf } from '../../devnet/suffixes.js'
import { createRegistry } from '../../src/registry/register.js'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { sendMixedTraffic, startTestChain, type TestChain } from '../support/chain.js'
import { indexThrough } from '../support/indexer.js'
import { startRpcProxy } from '../support/rpc-proxy.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { CUSTOM_REGISTRY, sendCraftedTraffic, type Crafted } from './crafted.js'

/**
 * Validation by hash against traffic mined on anvil: every attributed
 * transaction and UserOperation of the generator's ground truth, plus a few
 * crafted ones whose every field is known. Each is validated from the index
 * (filled by the real indexer), then again with the index emptied, from the
 * chain over RPC — and the two answers must be the same.
 */
let chain: TestChain
let database: TestDatabase
let redis: TestRedis
let api: TestApi
let truth: GroundTruth
let crafted: Crafted
let head: number
const registered = new Map<string, Address>()
let code: string

type Unit = {
  kind: 'transaction' | 'userOperation'
  hash: Hex
  txHash: Hex
  userOpHash?: Hex
  blockNumber: number
  status: 'success' | 'reverted'
  schemaId: number
  suffixGas: number
  codes: Set<string>
}

/** The ground truth's rows (one per code) folded into one unit per transaction or operation. */
function attributedUnits(): Unit[] {
  const units = new Map<string, Unit>()
  for (const row of truth.attributions) {
    if (row.kind === 'userOperation' && !row.userOpHash) continue
    const key = `${row.txHash}:${row.userOpIndex}`
    let unit = units.get(key)
    if (!unit) {
      unit = {
        kind: row.kind,
        hash: row.kind === 'transaction' ? row.txHash : row.userOpHash!,
        txHash: row.txHash,
        userOpHash: row.userOpHash,
        blockNumber: row.blockNumber,
        status: row.status,
        schemaId: row.schemaId,
        suffixGas: row.suffixGas,
        codes: new Set(),
      }
      units.set(key, unit)
    }
    unit.codes.add(row.code)
  }
  return [...units.values()]
}

const validateUrl = (base: string, query: Record<string, string>) => `${base}/v1/attribution/validate?${new URLSearchParams(query)}`
const validate = (type: string, hash: string, extra: Record<string, string> = {}, base = api.url) =>
  request(validateUrl(base, { type, hash, ...extra }))

async function blockOf(hash: Hex): Promise<number> {
  return Number((await chain.client.getTransactionReceipt({ hash })).blockNumber)
}

beforeAll(async () => {
  ;[chain, database, redis] = await Promise.all([startTestChain(), createTestDatabase('validate'), createTestRedis()])
  const registry = createRegistry({ db: database.db })
  for (const wallet of chain.wallets.traffic) {
    const entry = await registry.register(wallet.address)
    registered.set(entry.builderCode, entry.walletAddress)
  }
  code = [...registered.keys()][0]!
  truth = await sendMixedTraffic(chain, { transactions: 54, blocks: 6, registeredCodes: [...registered.keys()] })
  crafted = await sendCraftedTraffic(chain, code)
  head = Number(await chain.client.getBlockNumber())

  await indexThrough({ database, redis, chains: [chain.config], chainId: chain.chainId, head })
  // no CHAIN_ID: the API reads it from the node when first needed
  // no reuse of index answers: the tests empty the index and expect the chain to answer at once
  api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: redis.url, env: { RPC_URL: chain.rpcUrl, VALIDATE_CACHE_MS: '0' } })
}, 240_000)

afterAll(async () => {
  await api?.close()
  await chain?.stop()
  await redis?.cleanup()
  await database?.drop()
})

function expectMatchesUnit(body: any, unit: Unit, source: 'index' | 'rpc') {
  expect(body).toMatchObject({
    attributed: true,
    type: unit.kind,
    hash: unit.hash,
    chainId: chain.chainId,
    transactionHash: unit.txHash,
    blockNumber: unit.blockNumber,
    status: unit.status,
    schemaId: unit.schemaId,
    suffixGas: unit.suffixGas,
    source,
  })
  if (unit.kind === 'userOperation') expect(body.userOpHash).toBe(unit.userOpHash)
  expect(new Set(body.codes.map((entry: { code: string }) => entry.code))).toEqual(unit.codes)
  expect(body.suffix).toMatch(/80218021802180218021802180218021$/)
}

/** Answers from the index, kept to compare with the RPC answers once the index is emptied. */
const indexAnswers = new Map<string, unknown>()

describe('from the index', () => {
  it('answers every attributed transaction and UserOperation of the ground truth', async () => {
    const units = attributedUnits()
    expect(units.filter((unit) => unit.kind === 'transaction').length).toBeGreaterThan(5)
    expect(units.filter((unit) => unit.kind === 'userOperation').length).toBeGreaterThan(2)
    expect(units.some((unit) => unit.status === 'reverted')).toBe(true)
    expect(new Set(units.map((unit) => unit.schemaId))).toEqual(new Set([0, 1, 2]))
    for (const unit of units) {
      const response = await validate(unit.kind, unit.hash)
      expect(response.status, `${unit.kind} ${unit.hash}`).toBe(200)
      expectMatchesUnit(response.body, unit, 'index')
      indexAnswers.set(`${unit.kind}:${unit.hash}`, response.body)
    }
  })

  it('marks registered codes with their wallet, and nothing else', async () => {
    let seen = 0
    for (const body of indexAnswers.values() as Iterable<any>) {
      for (const entry of body.codes) {
        const ours = body.schemaId !== 1 && !(entry.role === 'wallet' && body.registries?.wallet) && !(entry.role === 'app' && body.registries?.app)
        const wallet = ours ? registered.get(entry.code) : undefined
        expect(entry.registered, entry.code).toBe(wallet !== undefined)
        expect(entry.walletAddress).toBe(wallet)
        if (wallet) seen++
      }
    }
    expect(seen).toBeGreaterThan(0)
  })

  it('gives every field of a schema 2 transaction: roles, validity, custom registry, suffix and gas', async () => {
    const response = await validate('transaction', crafted.schema2Tx)
    expect(response.status).toBe(200)
    expect(response.body).toEqual({
      attributed: true,
      type: 'transaction',
      hash: crafted.schema2Tx,
      chainId: chain.chainId,
      transactionHash: crafted.schema2Tx,
      blockNumber: await blockOf(crafted.schema2Tx),
      status: 'success',
      schemaId: 2,
      codes: [
        { code, role: 'app', valid: true, registered: true, walletAddress: registered.get(code) },
        // the suffix names a custom registry for the wallet code: never ours
        { code: 'privy', role: 'wallet', valid: true, registered: false },
        { code: 'relay', role: 'service', valid: true, registered: false },
        { code: 'Bad-Code', role: 'service', valid: false, registered: false },
      ],
      registries: { wallet: { chainId: 8453, address: getAddress(CUSTOM_REGISTRY) } },
      suffix: crafted.schema2Suffix.toLowerCase(),
      suffixGas: suffixGasOf(crafted.schema2Suffix),
      source: 'index',
    })
    indexAnswers.set(`transaction:${crafted.schema2Tx}`, response.body)
  })

  it('reports a schema 1 registry and never counts its codes as ours', async () => {
    const response = await validate('transaction', crafted.schema1Tx)
    expect(response.body).toMatchObject({
      attributed: true,
      schemaId: 1,
      codeRegistry: { chainId: 8453, address: getAddress(CUSTOM_REGISTRY) },
      codes: [
        { code, role: 'code', valid: true, registered: false },
        { code: 'morpho', role: 'code', valid: true, registered: false },
      ],
      source: 'index',
    })
    indexAnswers.set(`transaction:${crafted.schema1Tx}`, response.body)
  })

  it('answers a multi-code UserOperation and a reverted one', async () => {
    const multi = await validate('userOperation', crafted.multiCodeOp.hash)
    expect(multi.body).toEqual({
      attributed: true,
      type: 'userOperation',
      hash: crafted.multiCodeOp.hash,
      chainId: chain.chainId,
      transactionHash: crafted.bundle,
      userOpHash: crafted.multiCodeOp.hash,
      blockNumber: await blockOf(crafted.bundle),
      status: 'success',
      schemaId: 0,
      codes: [
        { code, role: 'code', valid: true, registered: true, walletAddress: registered.get(code) },
        { code: 'zora', role: 'code', valid: true, registered: false },
        { code: 'aave_v3', role: 'code', valid: true, registered: false },
      ],
      suffix: crafted.multiCodeSuffix.toLowerCase(),
      suffixGas: suffixGasOf(crafted.multiCodeSuffix),
      source: 'index',
    })
    const reverted = await validate('userOperation', crafted.revertedOp.hash)
    expect(reverted.body).toMatchObject({ attributed: true, status: 'reverted', transactionHash: crafted.bundle, source: 'index' })
    indexAnswers.set(`userOperation:${crafted.multiCodeOp.hash}`, multi.body)
    indexAnswers.set(`userOperation:${crafted.revertedOp.hash}`, reverted.body)
  })

  it('answers from the index while the node is down', async () => {
    const down = await startTestApi({
      db: database.db,
      databaseUrl: database.url,
      redisUrl: redis.url,
      env: { RPC_URL: 'http://127.0.0.1:9', CHAIN_ID: String(chain.chainId), RPC_TIMEOUT_MS: '2000' },
    })
    try {
      const response = await validate('transaction', crafted.schema2Tx, {}, down.url)
      expect(response.status).toBe(200)
      expect(response.body.source).toBe('index')
      expect((await validate('transaction', truth.unattributedTxHashes[0]!, {}, down.url)).status).toBe(502)
    } finally {
      await down.close()
    }
  })
})

describe('from the chain, with the index emptied', () => {
  beforeAll(async () => {
    await database.db.$client`delete from attributions`
  })

  it('gives the same answers as the index did, except for the source', async () => {
    expect(indexAnswers.size).toBeGreaterThan(10)
    for (const [key, fromIndex] of indexAnswers) {
      const [type, hash] = key.split(':') as [string, string]
      const response = await validate(type, hash)
      expect(response.status, key).toBe(200)
      expect(response.body, key).toEqual({ ...(fromIndex as object), source: 'rpc' })
    }
  })

  it('answers attributed: false for every unattributed transaction, bundles included', async () => {
    expect(truth.unattributedTxHashes.length).toBeGreaterThan(3)
    for (const hash of truth.unattributedTxHashes) {
      const response = await validate('transaction', hash)
      expect(response.status, hash).toBe(200)
      expect(response.body).toMatchObject({ attributed: false, type: 'transaction', hash, transactionHash: hash, codes: [], source: 'rpc' })
      expect(response.body.malformed).toBeUndefined()
      expect(response.body.blockNumber).toBe(await blockOf(hash))
    }
    // the crafted bundle carries attributed operations, but its own calldata has no suffix
    expect((await validate('transaction', crafted.bundle)).body).toMatchObject({ attributed: false, codes: [] })
  })

  it('reports malformed suffixes with the reason', async () => {
    const ownMalformed = truth.malformed.filter((entry) => entry.userOpIndex === -1)
    expect(ownMalformed.length).toBeGreaterThan(0)
    for (const { txHash } of ownMalformed) {
      const response = await validate('transaction', txHash)
      expect(response.status).toBe(200)
      expect(response.body).toMatchObject({ attributed: false, codes: [], malformed: { reason: expect.any(String) } })
    }
    const op = await validate('userOperation', crafted.malformedOp.hash)
    expect(op.body).toMatchObject({
      attributed: false,
      status: 'success',
      userOpHash: crafted.malformedOp.hash,
      codes: [],
      malformed: { reason: 'unknown schema id 7' },
    })
  })

  it('answers attributed: false for a UserOperation without a suffix', async () => {
    const response = await validate('userOperation', crafted.plainOp.hash)
    expect(response.status).toBe(200)
    expect(response.body).toEqual({
      attributed: false,
      type: 'userOperation',
      hash: crafted.plainOp.hash,
      chainId: chain.chainId,
      transactionHash: crafted.bundle,
      userOpHash: crafted.plainOp.hash,
      blockNumber: await blockOf(crafted.bundle),
      status: 'success',
      codes: [],
      source: 'rpc',
    })
  })

  it('answers POST with a JSON body the same as GET, with chainId given or not', async () => {
    const get = await validate('userOperation', crafted.multiCodeOp.hash)
    const post = await request(`${api.url}/v1/attribution/validate`, {
      method: 'POST',
      body: { type: 'userOperation', hash: crafted.multiCodeOp.hash.toUpperCase().replace('0X', '0x'), chainId: chain.chainId },
    })
    expect(post.status).toBe(200)
    expect(post.body).toEqual(get.body)
  })

  it('halves the eth_getLogs range when a node refuses a large one', async () => {
    const proxy = await startRpcProxy({ target: chain.rpcUrl, limits: { maxLogRange: 4 } })
    const limited = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: redis.url, env: { RPC_URL: proxy.url } })
    try {
      const response = await validate('userOperation', crafted.multiCodeOp.hash, {}, limited.url)
      expect(response.status).toBe(200)
      expect(response.body).toEqual({ ...(indexAnswers.get(`userOperation:${crafted.multiCodeOp.hash}`) as object), source: 'rpc' })
      expect(proxy.methodCalls['eth_getLogs']).toBeGreaterThan(1)
    } finally {
      await limited.close()
      await proxy.close()
    }
  })
})

describe('bad requests and unknown hashes', () => {
  const someHash = `0x${'ab'.repeat(32)}`
  const cases: Array<[string, Record<string, string>, string]> = [
    ['a missing hash', { type: 'transaction' }, 'hash'],
    ['a short hash', { type: 'transaction', hash: '0x1234' }, 'hash'],
    ['a hash that is not hex', { type: 'transaction', hash: `0x${'zz'.repeat(32)}` }, 'hash'],
    ['a hash without 0x', { type: 'transaction', hash: 'ab'.repeat(32) }, 'hash'],
    ['a missing type', { hash: someHash }, 'type'],
    ['an unknown type', { type: 'tx', hash: someHash }, 'type'],
    ['a non-numeric chainId', { type: 'transaction', hash: someHash, chainId: 'base' }, 'chainId'],
    ['a zero chainId', { type: 'transaction', hash: someHash, chainId: '0' }, 'chainId'],
    ['a chainId that is not configured', { type: 'transaction', hash: someHash, chainId: '8453' }, 'chainId'],
  ]
  for (const [name, query, field] of cases) {
    it(`400 naming ${field} for ${name}`, async () => {
      const response = await request(validateUrl(api.url, query))
      expect(response.status).toBe(400)
      expect(response.body).toMatchObject({ success: false, error: { code: 'invalid_request', field } })
      expect(response.body.error.message).toMatch(new RegExp(`^${field}: `))
    })
  }

  it('400 for POST bodies that are not the right object', async () => {
    const url = `${api.url}/v1/attribution/validate`
    expect((await request(url, { method: 'POST', rawBody: '{"type":' })).status).toBe(400)
    const array = await request(url, { method: 'POST', body: [1] })
    expect(array.status).toBe(400)
    const wrongType = await request(url, { method: 'POST', body: { type: 'userOperation', hash: someHash, chainId: 'x' } })
    expect(wrongType.body.error.field).toBe('chainId')
  })

  it('400 naming chainId when it is omitted and several chains are configured', async () => {
    const chains = JSON.stringify([
      { chainId: chain.chainId, rpcUrl: chain.rpcUrl },
      { chainId: 8453, rpcUrl: 'http://127.0.0.1:9' },
    ])
    const multi = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: redis.url, env: { CHAINS: chains } })
    try {
      const response = await validate('transaction', crafted.schema2Tx, {}, multi.url)
      expect(response.status).toBe(400)
      expect(response.body.error.field).toBe('chainId')
      const chosen = await validate('transaction', crafted.schema2Tx, { chainId: String(chain.chainId) }, multi.url)
      expect(chosen.status).toBe(200)
    } finally {
      await multi.close()
    }
  })

  it('404 for a transaction hash the chain does not know', async () => {
    const response = await validate('transaction', someHash)
    expect(response.status).toBe(404)
    expect(response.body).toMatchObject({ success: false, error: { code: 'not_found' } })
  })

  it('404 for a UserOperation hash, saying the bounded search gave up', async () => {
    const response = await validate('userOperation', someHash)
    expect(response.status).toBe(404)
    expect(response.body.error.message).toMatch(/gave up/)
    // a transaction hash is not a UserOperation hash
    expect((await validate('userOperation', crafted.schema2Tx)).status).toBe(404)
  })

  it('404 for an existing UserOperation older than the search window', async () => {
    const narrow = await startTestApi({
      db: database.db,
      databaseUrl: database.url,
      redisUrl: redis.url,
      env: { RPC_URL: chain.rpcUrl, VALIDATE_LOG_WINDOW: '1' },
    })
    try {
      const older = attributedUnits().find((unit) => unit.kind === 'userOperation' && unit.blockNumber < head)!
      const response = await validate('userOperation', older.hash, {}, narrow.url)
      expect(response.status).toBe(404)
      expect(response.body.error.message).toMatch(/last 1 blocks .*gave up/)
    } finally {
      await narrow.close()
    }
  })
})

describe('node failures', () => {
  const someHash = `0x${'cd'.repeat(32)}`

  async function withProxiedApi(fault: 'timeout' | '500' | 'endless', env: Record<string, string>, run: (url: string) => Promise<void>) {
    const proxy = await startRpcProxy({ target: chain.rpcUrl, fault: () => fault })
    const proxied = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: redis.url, env: { RPC_URL: proxy.url, ...env } })
    try {
      await run(proxied.url)
    } finally {
      await proxied.close()
      await proxy.close()
    }
  }

  it('502 when nothing listens at the RPC URL', async () => {
    const down = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: redis.url, env: { RPC_URL: 'http://127.0.0.1:9' } })
    try {
      for (const type of ['transaction', 'userOperation']) {
        const response = await validate(type, someHash, {}, down.url)
        expect(response.status).toBe(502)
        expect(response.body).toMatchObject({ success: false, error: { code: 'bad_gateway' } })
      }
    } finally {
      await down.close()
    }
  })

  it('502 when the node answers HTTP 500', async () => {
    await withProxiedApi('500', { CHAIN_ID: String(chain.chainId) }, async (url) => {
      expect((await validate('transaction', someHash, {}, url)).status).toBe(502)
    })
  })

  it('502 when the node streams an answer that never ends, cut off at RPC_MAX_ANSWER_BYTES long before the timeout', async () => {
    await withProxiedApi('endless', { CHAIN_ID: String(chain.chainId), RPC_MAX_ANSWER_BYTES: String(4 * 2 ** 20), RPC_BATCH_BYTES: String(2 ** 20), RPC_TIMEOUT_MS: '60000' }, async (url) => {
      const started = performance.now()
      const response = await validate('transaction', someHash, {}, url)
      expect(response.status).toBe(502)
      expect(response.body.error.message).toMatch(/passed 4194304 bytes \(RPC_MAX_ANSWER_BYTES\)/)
      expect(performance.now() - started).toBeLessThan(30_000)
    })
  })

  it('504 when the node does not answer in time', async () => {
    await withProxiedApi('timeout', { CHAIN_ID: String(chain.chainId), RPC_TIMEOUT_MS: '300' }, async (url) => {
      const response = await validate('userOperation', someHash, {}, url)
      expect(response.status).toBe(504)
      expect(response.body.error.code).toBe('gateway_timeout')
    })
  })
})

describe('validate CLI', () => {
  const cli = fileURLToPath(new URL('../../bin/attribution.mjs', import.meta.url))
  const run = (args: string[]) =>
    promisify(execFile)(process.execPath, [cli, 'validate', ...args], {
      env: { ...process.env, DATABASE_URL: database.url, RPC_URL: chain.rpcUrl, LOG_LEVEL: 'silent', DEVNET: 'false' },
    }).then(
      ({ stdout }) => ({ code: 0, json: JSON.parse(stdout) }),
      (error: { code: number; stdout: string }) => ({ code: error.code, json: JSON.parse(error.stdout) }),
    )

  it('prints the HTTP answer and exits 0 when attributed', async () => {
    const { code: exit, json } = await run([crafted.multiCodeOp.hash, '--type', 'userOperation', '--chain', String(chain.chainId)])
    expect(exit).toBe(0)
    expect(json).toEqual((await validate('userOperation', crafted.multiCodeOp.hash)).body)
  }, 120_000)

  it('exits 1 when not attributed and when not found, 64 for bad input', async () => {
    // three independent processes, each paying tsx's start-up: run side by side
    const [plain, missing, bad] = await Promise.all([
      run([truth.unattributedTxHashes[0]!]),
      run([`0x${'ef'.repeat(32)}`, '--type', 'transaction']),
      run(['0x12', '--type', 'userOperation']),
    ])
    expect(plain.code).toBe(1)
    expect(plain.json).toMatchObject({ attributed: false, type: 'transaction' })
    expect(missing.code).toBe(1)
    expect(missing.json).toMatchObject({ success: false, error: { code: 'not_found' } })
    expect(bad.code).toBe(64)
    expect(bad.json.error.field).toBe('hash')
  }, 120_000)
})
