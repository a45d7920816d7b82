import type postgres from 'postgres'
import { planForParameters } from '../db/client.js'
import { removeAttributionsAbove } from './commit.js'
import { shareRefsWriters } from './final-refs.js'
import { lockRangeReplacements } from './ranges.js'

export type RollbackResult = { ranges: number; attributions: number; malformed: number }

/**
 * Undoes everything counted above block `ancestor` (a range boundary) in one
 * transaction: attribution rows and the totals they added, malformed
 * counts, stored blocks, and the ranges themselves so they are cut again on
 * the new branch. Locking the ranges first waits for any worker committing
 * one of them, so its rows are seen and removed too; a worker that commits
 * later finds its range gone and writes nothing.
 */
export async function rollbackAbove(sql: postgres.ReservedSql, chainId: number, ancestor: number): Promise<RollbackResult> {
  await sql`begin`
  try {
    // a bulk commit reads the distinct-sender tables as nobody else writes them (final-refs.ts)
    await shareRefsWriters(sql)
    await planForParameters(sql)
    // a split of one of these ranges commits before this, or finds it gone
    await lockRangeReplacements(sql, chainId)
    const locked = await sql`select 1 from ranges where chain_id = ${chainId} and to_block > ${ancestor} order by from_block for update`
    const removed = await removeAttributionsAbove(sql, chainId, ancestor)
    const malformed = await sql`delete from malformed_suffixes where chain_id = ${chainId} and block_number > ${ancestor} returning 1`
    await sql`delete from blocks where chain_id = ${chainId} and number > ${ancestor}`
    await sql`delete from ranges where chain_id = ${chainId} and to_block > ${ancestor}`
    await sql`commit`
    return { ranges: locked.length, attributions: removed, malformed: malformed.length }
  } catch (error) {
    await sql`rollback`.catch(() => {})
    throw error
  }
}
