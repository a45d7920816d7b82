import type { Hex } from 'viem'
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest'
import { rollbackAbove } from '../../src/store/rollback.js'
import { insertRanges, lockRangeReplacements, splitRange } from '../../src/store/ranges.js'
import { until } from '../support/poll.js'
import { createTestDatabase, type TestDatabase } from '../support/services.js'

/**
 * A split (a range too dense, replaced by pieces) and a rollback (a reorg)
 * both replace a chain's ranges. The rollback locks the ranges above its
 * ancestor, then deletes them: pieces inserted in between were not among
 * the rows it locked, so a worker could commit one and leave its rows
 * behind. Each takes the chain's replacement lock first and waits for the
 * other.
 */

let database: TestDatabase
const CHAIN = 7
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hex
const job = { chainId: CHAIN, fromBlock: 10, toBlock: 20, parentHash: hash(9), toHash: hash(20) }
const pieces = [
  { ...job, toBlock: 14, toHash: hash(14) },
  { ...job, fromBlock: 15, parentHash: hash(14) },
]

beforeAll(async () => {
  database = await createTestDatabase('split_rollback')
})

afterAll(async () => {
  await database?.drop()
})

beforeEach(async () => {
  await database.db.$client`delete from ranges`
  await insertRanges(database.db.$client, [job])
})

/**
 * Whether `promise` is still waiting once PostgreSQL shows a session queued
 * on an advisory lock of this test's database (pg_locks lists every
 * database's locks, and other test files run meanwhile): the proof it got as
 * far as the lock. False if it settled first, i.e. did not wait.
 */
async function queuedBehindTheLock(promise: Promise<unknown>): Promise<boolean> {
  let settled = false
  void promise.then(() => (settled = true), () => (settled = true))
  const sql = database.db.$client
  await until('a session queued on the chain\'s replacement lock, or the call settled', async () =>
    settled ||
    (await sql`select 1 from pg_locks where locktype = 'advisory' and not granted
      and database = (select oid from pg_database where datname = current_database())`).length > 0,
  )
  return !settled
}

const storedRanges = async () =>
  database.db.$client<{ from: number; to: number }[]>`select from_block::int as from, to_block::int as to from ranges where chain_id = ${CHAIN} order by from_block`

it('a split waits for a rollback under way, then finds its range gone and changes nothing', async () => {
  const sql = database.db.$client
  const rollback = await sql.reserve()
  try {
    await rollback`begin`
    await lockRangeReplacements(rollback, CHAIN)
    const split = splitRange(sql, job, pieces)
    expect(await queuedBehindTheLock(split)).toBe(true)
    await rollback`delete from ranges where chain_id = ${CHAIN} and to_block > 9`
    await rollback`commit`
    expect(await split).toBe(false)
  } finally {
    // a failed expectation leaves the transaction open: end it before the connection goes back
    await rollback`rollback`.catch(() => {})
    rollback.release()
  }
  expect(await storedRanges()).toEqual([])
})

it('a rollback waits for a split under way, then removes its pieces too', async () => {
  const sql = database.db.$client
  const split = await sql.reserve()
  const rolling = await sql.reserve()
  try {
    // the split's transaction, held open after its lock
    await split`begin`
    await lockRangeReplacements(split, CHAIN)
    const rollback = rollbackAbove(rolling, CHAIN, 9)
    expect(await queuedBehindTheLock(rollback)).toBe(true)
    await split`update ranges set to_block = 14, to_hash = ${hash(14)} where chain_id = ${CHAIN} and from_block = 10`
    await insertRanges(split, [pieces[1]!])
    await split`commit`
    expect((await rollback).ranges).toBe(2)
  } finally {
    await split`rollback`.catch(() => {})
    split.release()
    rolling.release()
  }
  expect(await storedRanges()).toEqual([])
})

it('splits a pending range into its pieces, once', async () => {
  const sql = database.db.$client
  expect(await splitRange(sql, job, pieces)).toBe(true)
  expect(await storedRanges()).toEqual([{ from: 10, to: 14 }, { from: 15, to: 20 }])
  // the same split again (a duplicate job) finds the range changed
  expect(await splitRange(sql, job, pieces)).toBe(false)
  expect(await storedRanges()).toEqual([{ from: 10, to: 14 }, { from: 15, to: 20 }])
})
