import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { getAddress, type Address, type Hex } from 'viem'
import type { Attributed } from '../../src/attribution/decode.js'
import { dayOf } from '../../src/store/buckets.js'
import { builderCodes } from '../../src/db/schema/index.js'
import { rollbackAbove } from '../../src/store/rollback.js'
import { readIndexerStatus } from '../../src/indexer-status/status.js'
import { commitRange, type AttributionRow, type RangeResult } from '../../src/store/commit.js'
import type { RangeJob } from '../../src/store/ranges.js'
import { request, startTestApi, type TestApi } from '../support/api.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'

/**
 * The aggregates behind the summary, unique senders, leaderboard and a
 * code's attribution list, written by the real commit and rollback
 * statements for hand-made ranges whose every figure is known: exact after
 * commits, after a crash retry (the same range committed twice) and after a
 * reorg rollback followed by the new branch.
 */
const CHAIN = 9001
const HOUR = 3600
const base = Math.floor(Date.now() / 1000 / HOUR) * HOUR - 2 * HOUR + 60
const CUSTOM: { chainId: number; address: Address } = { chainId: 8453, address: '0x00000000000000000000000000000000000000Aa' }
const CUSTOM_NS = `8453:${CUSTOM.address.toLowerCase()}`
/** How answers spell it: the address EIP-55. */
const CUSTOM_LABEL = `8453:${getAddress(CUSTOM.address)}`
const WALLET = '0x000000000000000000000000000000000000dEaD'

const sender = (n: number) => `0x${n.toString(16).padStart(40, '0')}` as Address
const hash = (label: string) => `0x${Buffer.from(label).toString('hex').padEnd(64, '0')}` as Hex

type Item = {
  tx: string
  kind?: 'transaction' | 'userOperation'
  userOpIndex?: number
  from: number
  codes: string[]
  status?: 'success' | 'reverted'
  custom?: boolean
  invalid?: boolean
}

function rowsOf(block: number, timestamp: number, items: Item[]): AttributionRow[] {
  return items.flatMap((item, txIndex) => {
    const kind = item.kind ?? 'transaction'
    const attribution: Attributed = {
      kind: 'attributed',
      schemaId: item.custom ? 1 : 0,
      codes: item.codes,
      entries: item.codes.map((code) => ({ code, role: 'service', valid: !item.invalid }) as Attributed['entries'][number]),
      suffix: '0x0180218021802180218021802180218021',
      suffixBytes: 17,
      suffixGas: 100,
    }
    return item.codes.map((code) => ({
      code,
      record: {
        kind,
        txHash: hash(item.tx),
        txIndex,
        blockNumber: block,
        blockHash: hash(`block${block}`),
        blockTimestamp: timestamp,
        userOpIndex: kind === 'userOperation' ? (item.userOpIndex ?? 0) : -1,
        userOpHash: kind === 'userOperation' ? hash(`${item.tx}op${item.userOpIndex}`) : undefined,
        sender: sender(item.from),
        target: null,
        status: item.status ?? 'success',
        actualGasCost: undefined,
        attribution,
      },
      resolution: item.invalid
        ? { status: 'invalid', wallet: null, registry: null }
        : item.custom
          ? { status: 'custom', wallet: null, registry: CUSTOM }
          : code === 'alpha'
            ? { status: 'registered', wallet: WALLET, registry: null }
            : { status: 'unregistered', wallet: null, registry: null },
    }))
  })
}

type RangeSpec = { from: number; to: number; branch: string; block: number; items: Item[] }

function rangeOf(spec: RangeSpec): RangeResult {
  const job: RangeJob = { chainId: CHAIN, fromBlock: spec.from, toBlock: spec.to, parentHash: hash(`p${spec.from}`), toHash: hash(`${spec.branch}${spec.to}`) }
  const timestamp = base + spec.block * 60
  return {
    job,
    blocks: [{ number: spec.to, hash: job.toHash, parentHash: hash(`p${spec.to}`), timestamp, txCount: spec.items.length } as RangeResult['blocks'][number]],
    txCount: spec.items.length,
    rows: rowsOf(spec.block, timestamp, spec.items),
    malformed: [],
  }
}

const R1: RangeSpec = {
  from: 1,
  to: 10,
  branch: 'a',
  block: 5,
  items: [
    { tx: 'A', from: 1, codes: ['alpha', 'beta'] },
    { tx: 'B', from: 2, codes: ['alpha'], status: 'reverted' },
    { tx: 'C', kind: 'userOperation', userOpIndex: 0, from: 3, codes: ['alpha'] },
    { tx: 'C', kind: 'userOperation', userOpIndex: 1, from: 1, codes: ['alpha'] },
    { tx: 'D', from: 2, codes: ['alpha'], custom: true },
    { tx: 'E', from: 4, codes: ['Bad-Code'], invalid: true },
  ],
}
const R2: RangeSpec = { from: 11, to: 20, branch: 'a', block: 15, items: [{ tx: 'F', from: 5, codes: ['alpha'] }, { tx: 'G', from: 1, codes: ['beta'] }] }
/** The same blocks on the branch that replaced R2 after a reorg. */
const R2B: RangeSpec = { from: 11, to: 20, branch: 'b', block: 16, items: [{ tx: 'H', from: 6, codes: ['beta'] }] }

let database: TestDatabase
let api: TestApi

async function cutRange(spec: RangeSpec) {
  const { job } = rangeOf(spec)
  await database.db.$client`
    insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash) values (${CHAIN}, ${job.fromBlock}, ${job.toBlock}, ${job.parentHash}, ${job.toHash})`
}

async function rollbackTo(ancestor: number) {
  const reserved = await database.db.$client.reserve()
  try {
    return await rollbackAbove(reserved, CHAIN, ancestor)
  } finally {
    reserved.release()
  }
}

const get = async (path: string) => {
  const response = await request(`${api.url}${path}`)
  expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(200)
  return response.body
}

beforeAll(async () => {
  database = await createTestDatabase('aggregates')
  api = await startTestApi({ db: database.db, databaseUrl: database.url, redisUrl: inject('redisUrl') })
  await database.db.insert(builderCodes).values({ code: 'alpha', walletAddress: WALLET })
  await cutRange(R1)
  await cutRange(R2)
  expect(await commitRange(database.db, rangeOf(R1))).toEqual({ committed: true, inserted: 7 })
  expect(await commitRange(database.db, rangeOf(R2))).toEqual({ committed: true, inserted: 2 })
}, 60_000)

afterAll(async () => {
  await api?.close()
  await database?.drop()
})

const day = dayOf(new Date((base + 5 * 60) * 1000))

describe('after two ranges commit', () => {
  it('summarizes distinct transactions, UserOperations, active codes and exact unique senders', async () => {
    for (const window of ['24h', '7d', '30d', 'all']) {
      const body = await get(`/v1/analytics/summary?window=${window}&chainId=${CHAIN}`)
      expect(body.totals, window).toEqual({ attributions: 9, transactions: 5, userOperations: 2, total: 7, reverted: 1, activeCodes: 4, uniqueSenders: 5 })
    }
    expect((await get('/v1/analytics/summary?window=24h&chainId=1')).totals).toEqual({
      attributions: 0, transactions: 0, userOperations: 0, total: 0, reverted: 0, activeCodes: 0, uniqueSenders: 0,
    })
  })

  it('draws the 24h summary hourly, with the activity in its hour', async () => {
    const body = await get(`/v1/analytics/summary?window=24h`)
    expect(body.granularity).toBe('hour')
    expect(body.series).toHaveLength(24)
    const active = body.series.filter((point: { attributions: number }) => point.attributions > 0)
    expect(active).toEqual([{ start: new Date((base - 60) * 1000).toISOString(), attributions: 9, transactions: 5, userOperations: 2, reverted: 1 }])
  })

  it('keeps registry namespaces apart and leaves invalid codes out of the leaderboard unless asked', async () => {
    const body = await get('/v1/analytics/leaderboard?window=24h')
    expect(body.entries).toEqual([
      { rank: 1, code: 'alpha', registry: 'canonical', total: 4, transactions: 2, userOperations: 2, reverted: 1, walletAddress: WALLET, share: 4 / 7, previousTotal: 0, change: 4, invalid: false },
      { rank: 2, code: 'beta', registry: 'canonical', total: 2, transactions: 2, userOperations: 0, reverted: 0, walletAddress: null, share: 2 / 7, previousTotal: 0, change: 2, invalid: false },
      { rank: 3, code: 'alpha', registry: CUSTOM_LABEL, total: 1, transactions: 1, userOperations: 0, reverted: 0, walletAddress: null, share: 1 / 7, previousTotal: 0, change: 1, invalid: false },
    ])
    const withInvalid = await get('/v1/analytics/leaderboard?window=all&include=invalid')
    expect(withInvalid.entries.map((e: { code: string; invalid: boolean; share: number; change: null }) => [e.code, e.invalid, e.share, e.change])).toEqual([
      ['alpha', false, 4 / 8, null],
      ['beta', false, 2 / 8, null],
      ['Bad-Code', true, 1 / 8, null],
      ['alpha', false, 1 / 8, null],
    ])
    expect((await get(`/v1/analytics/leaderboard?window=7d&registry=${CUSTOM_NS}`)).entries.map((e: { code: string }) => e.code)).toEqual(['alpha'])
  })

  it('counts unique senders per code per day, exactly', async () => {
    const alpha = await get(`/v1/analytics/codes/alpha?chainId=${CHAIN}`)
    expect(alpha.totals).toEqual({ transactions: 3, userOperations: 2, total: 5, reverted: 1, suffixGas: 600 })
    expect(alpha.uniqueSenders).toBe(4)
    expect(alpha.daily.find((point: { day: string }) => point.day === day)).toEqual({ day, transactions: 3, userOperations: 2, uniqueSenders: 4 })
    const canonical = await get(`/v1/analytics/codes/alpha?registry=canonical`)
    expect([canonical.totals.total, canonical.uniqueSenders]).toEqual([4, 4])
    const custom = await get(`/v1/analytics/codes/alpha?registry=${CUSTOM_NS}`)
    expect([custom.totals.total, custom.uniqueSenders]).toEqual([1, 1])
  })

  it('lists a code’s attributions newest first, paged by cursor, with explorer links for known chains', async () => {
    const first = await get('/v1/analytics/codes/alpha/attributions?limit=2')
    expect(first.attributions.map((a: { transactionHash: string; userOpHash: string | null }) => [a.transactionHash, a.userOpHash])).toEqual([
      [hash('F'), null],
      [hash('D'), null],
    ])
    expect(first.attributions[0]).toEqual({
      transactionHash: hash('F'), kind: 'transaction', userOpHash: null, chainId: CHAIN, blockNumber: 15,
      timestamp: new Date((base + 15 * 60) * 1000).toISOString(), status: 'success', sender: sender(5), suffixGas: 100, schemaId: 0,
      codeStatus: 'registered', registry: 'canonical', explorerUrl: null,
    })
    const second = await get(`/v1/analytics/codes/alpha/attributions?limit=2&cursor=${first.nextCursor}`)
    const third = await get(`/v1/analytics/codes/alpha/attributions?limit=2&cursor=${second.nextCursor}`)
    expect(third.attributions).toHaveLength(2)
    expect(third.nextCursor).toBeUndefined()
    const hashes = [...first.attributions, ...second.attributions, ...third.attributions].map((a: { transactionHash: string; userOpHash: string | null }) => a.userOpHash ?? a.transactionHash)
    expect(hashes).toEqual([hash('F'), hash('D'), hash('Cop1'), hash('Cop0'), hash('B'), hash('A')])
    const reverted = await get('/v1/analytics/codes/alpha/attributions?status=reverted')
    expect(reverted.attributions.map((a: { transactionHash: string }) => a.transactionHash)).toEqual([hash('B')])
    const ops = await get('/v1/analytics/codes/alpha/attributions?kind=userOperation&chainId=9001')
    expect(ops.attributions).toHaveLength(2)
    const bad = await request(`${api.url}/v1/analytics/codes/alpha/attributions?cursor=nonsense`)
    expect([bad.status, bad.body.error.field]).toEqual([400, 'cursor'])
  })

  it('exports CSV downloads of the series, the attributions and the leaderboard', async () => {
    const leaderboard = await fetch(`${api.url}/v1/analytics/leaderboard?window=24h&format=csv`)
    expect(leaderboard.headers.get('content-type')).toMatch(/^text\/csv/)
    expect(leaderboard.headers.get('content-disposition')).toBe('attachment; filename="leaderboard-24h.csv"')
    expect((await leaderboard.text()).split('\r\n')).toEqual([
      'rank,code,registry,total,transactions,userOperations,reverted,walletAddress,share,previousTotal,change,invalid',
      `1,alpha,canonical,4,2,2,1,${WALLET},${4 / 7},0,4,false`,
      `2,beta,canonical,2,2,0,0,,${2 / 7},0,2,false`,
      `3,alpha,${CUSTOM_LABEL},1,1,0,0,,${1 / 7},0,1,false`,
      '',
    ])
    const attributions = await fetch(`${api.url}/v1/analytics/codes/alpha/attributions?format=csv&status=reverted`)
    expect(attributions.headers.get('content-disposition')).toBe('attachment; filename="alpha-attributions.csv"')
    expect((await attributions.text()).split('\r\n')[1]).toBe(
      `${hash('B')},transaction,,${CHAIN},5,${new Date((base + 5 * 60) * 1000).toISOString()},reverted,${sender(2)},100,0,registered,canonical,`,
    )
    const daily = await fetch(`${api.url}/v1/analytics/codes/alpha?format=csv&from=${day}&to=${day}`)
    expect(await daily.text()).toBe(`day,transactions,userOperations,uniqueSenders\r\n${day},3,2,4\r\n`)
    const hourly = await get(`/v1/analytics/codes/alpha/hourly?window=24h`)
    expect(hourly.hourly).toHaveLength(24)
    expect(hourly.hourly.filter((p: { transactions: number; userOperations: number; reverted: number }) => p.transactions + p.userOperations + p.reverted > 0)).toEqual([
      { hour: new Date((base - 60) * 1000).toISOString(), transactions: 3, userOperations: 2, reverted: 1 },
    ])
  })
})

describe('crash retry and reorg rollback', () => {
  it('changes nothing when a range is committed again (a retried job)', async () => {
    expect(await commitRange(database.db, rangeOf(R1))).toEqual({ committed: false, inserted: 0 })
    const body = await get(`/v1/analytics/summary?window=24h&chainId=${CHAIN}`)
    expect(body.totals).toEqual({ attributions: 9, transactions: 5, userOperations: 2, total: 7, reverted: 1, activeCodes: 4, uniqueSenders: 5 })
  })

  it('takes a rolled-back range out of every figure, and counts the new branch', async () => {
    expect(await rollbackTo(10)).toEqual({ ranges: 1, attributions: 2, malformed: 0 })
    let summary = await get(`/v1/analytics/summary?window=24h&chainId=${CHAIN}`)
    expect(summary.totals).toEqual({ attributions: 7, transactions: 3, userOperations: 2, total: 5, reverted: 1, activeCodes: 4, uniqueSenders: 4 })
    const alpha = await get('/v1/analytics/codes/alpha')
    expect([alpha.totals.total, alpha.uniqueSenders]).toEqual([4, 3])
    expect((await get('/v1/analytics/codes/alpha/attributions')).attributions).toHaveLength(5)

    await cutRange(R2B)
    expect(await commitRange(database.db, rangeOf(R2B))).toEqual({ committed: true, inserted: 1 })
    // the job of the orphaned branch, retried late, finds its range gone
    expect(await commitRange(database.db, rangeOf(R2))).toEqual({ committed: false, inserted: 0 })
    summary = await get(`/v1/analytics/summary?window=all&chainId=${CHAIN}`)
    expect(summary.totals).toEqual({ attributions: 8, transactions: 4, userOperations: 2, total: 6, reverted: 1, activeCodes: 4, uniqueSenders: 5 })
    const leaderboard = await get('/v1/analytics/leaderboard?window=24h')
    expect(leaderboard.entries.map((e: { code: string; registry: string; total: number }) => [e.code, e.registry, e.total])).toEqual([
      ['alpha', 'canonical', 3],
      ['beta', 'canonical', 2],
      ['alpha', CUSTOM_LABEL, 1],
    ])
    const beta = await get('/v1/analytics/codes/beta')
    expect([beta.totals.total, beta.uniqueSenders]).toEqual([2, 2])
  })
})

describe('GET /v1/indexer/status', () => {
  it('reports head, indexed block, lag, pending and stuck ranges, the last minute and the last error', async () => {
    const sql = database.db.$client
    await sql`insert into chain_state (chain_id, head_block, head_hash) values (${CHAIN}, 40, ${hash('head')})`
    await sql`insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash, attempts, last_error, last_error_at)
              values (${CHAIN}, 21, 30, ${hash('p21')}, ${hash('a30')}, 5, 'eth_getBlockReceipts: 503', now()),
                     (${CHAIN}, 31, 40, ${hash('p31')}, ${hash('a40')}, 1, null, null)`
    const body = await get('/v1/indexer/status')
    expect(body.stuckAfterAttempts).toBe(5)
    const chain = body.chains.find((entry: { chainId: number }) => entry.chainId === CHAIN)
    const { headUpdatedAt, lagSeconds, lastError, endpoints, ...rest } = chain
    // no fetching process published its RPC endpoints here
    expect(endpoints).toEqual([])
    expect(rest).toEqual({
      chainId: CHAIN,
      headBlock: 40,
      indexedBlock: 20,
      lagBlocks: 20,
      rangesPending: 2,
      rangesStuck: 1,
      lastMinute: { ranges: 2, blocks: 20, transactions: 7, attributions: 8 },
    })
    expect(lastError).toMatchObject({ message: 'eth_getBlockReceipts: 503', fromBlock: 21, toBlock: 30, attempts: 5 })
    expect(typeof headUpdatedAt).toBe('string')
    // lag in seconds is the age of the indexed block (block 20, stored with the range)
    const at = new Date((base + 16 * 60 + 3_600) * 1000)
    const status = await readIndexerStatus(sql, { chainIds: [], stuckAfterAttempts: 5, now: at })
    expect(status.chains.find((entry) => entry.chainId === CHAIN)!.lagSeconds).toBe(3_600)
  })
})

describe('hours older than the hourly reads', () => {
  // a chain of its own: a backfill's block of a month ago and a block of the last hour, in one range each
  const OLD_CHAIN = 9002
  const rangeAt = (from: number, timestamp: number, items: Item[]): RangeResult => {
    const job: RangeJob = { chainId: OLD_CHAIN, fromBlock: from, toBlock: from, parentHash: hash(`old-p${from}`), toHash: hash(`old-a${from}`) }
    return {
      job,
      blocks: [{ number: from, hash: job.toHash, parentHash: job.parentHash, timestamp, txCount: items.length } as RangeResult['blocks'][number]],
      txCount: items.length,
      rows: rowsOf(from, timestamp, items),
      malformed: [],
    }
  }
  const monthAgo = base - 30 * 24 * HOUR
  const OLD = rangeAt(1, monthAgo, [{ tx: 'old1', from: 7, codes: ['gamma'] }, { tx: 'old2', from: 8, codes: ['gamma'], status: 'reverted' }])
  const RECENT = rangeAt(2, base, [{ tx: 'new1', from: 7, codes: ['gamma'] }])

  const hourly = async () =>
    database.db.$client<{ hour: number; success: number; reverted: number; attributions: number }[]>`
      select extract(epoch from c.hour)::float8 as hour, c.success_count::int as success, c.reverted_count::int as reverted, h.attributions::int as attributions
      from code_hourly_totals c join chain_hourly_totals h on h.chain_id = c.chain_id and h.hour = c.hour and h.kind = c.kind
      where c.chain_id = ${OLD_CHAIN} and c.code = 'gamma' order by c.hour`
  const daily = async () =>
    database.db.$client<{ day: string; success: number; reverted: number }[]>`
      select day::text as day, success_count::int as success, reverted_count::int as reverted
      from code_daily_totals where chain_id = ${OLD_CHAIN} and code = 'gamma' order by day`

  it('keeps daily totals of every day and hourly ones of recent hours only, through a commit and a rollback', async () => {
    for (const range of [OLD, RECENT]) {
      await database.db.$client`
        insert into ranges (chain_id, from_block, to_block, parent_hash, to_hash)
        values (${OLD_CHAIN}, ${range.job.fromBlock}, ${range.job.toBlock}, ${range.job.parentHash}, ${range.job.toHash})`
      expect(await commitRange(database.db, range)).toMatchObject({ committed: true })
    }
    const recentHour = Math.floor(base / HOUR) * HOUR
    expect(await hourly()).toEqual([{ hour: recentHour, success: 1, reverted: 0, attributions: 1 }])
    expect(await daily()).toEqual([
      { day: dayOf(new Date(monthAgo * 1000)), success: 1, reverted: 1 },
      { day: dayOf(new Date(base * 1000)), success: 1, reverted: 0 },
    ])

    // a reorg back to block 0 takes both out: the recent hour goes to 0, no old hour appears (negative), days to 0
    const reserved = await database.db.$client.reserve()
    try {
      expect(await rollbackAbove(reserved, OLD_CHAIN, 0)).toMatchObject({ ranges: 2, attributions: 3 })
    } finally {
      reserved.release()
    }
    expect(await hourly()).toEqual([{ hour: recentHour, success: 0, reverted: 0, attributions: 0 }])
    expect((await daily()).map(({ success, reverted }) => [success, reverted])).toEqual([
      [0, 0],
      [0, 0],
    ])
  })
})
