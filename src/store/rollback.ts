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
    const holding = await lastRangeStartAtOrBelow(sql, chainId, ancestor)
    const locked = await sql`select 1 from ranges where ${rangesAbove(sql, chainId, ancestor, holding)} order by from_block for update`
    const removed = await removeAttributionsAbove(sql, chainId, ancestor)
    const malformed = await sql`delete from malformed_suffixes where chain_id = ${chainId} and block_number > ${ancestor} returning 1`
    await sql`delete from blocks where chain_id = ${chainId} and number > ${ancestor}`
    await sql`delete from ranges where ${rangesAbove(sql, chainId, ancestor, holding)}`
    await sql`commit`
    return { ranges: locked.length, attributions: removed, malformed: malformed.length }
  } catch (error) {
    await sql`rollback`.catch(() => {})
    throw error
  }
}

/**
 * The ranges reaching above `ancestor` (`to_block > ancestor`), as a
 * condition the key answers: those starting above it, and the one holding
 * it, which starts at `holding` (the last start at or below it: ranges never
 * overlap), read first so the plan knows where to start. `to_block` alone
 * read every range of the chain, one per block at the tip, at every reorg.
 */
function rangesAbove(sql: postgres.ReservedSql, chainId: number, ancestor: number, holding: number) {
  return sql`chain_id = ${chainId} and from_block >= ${holding} and to_block > ${ancestor}`
}

/** The start of the last range starting at or below `block` (0 when none). */
async function lastRangeStartAtOrBelow(sql: postgres.ReservedSql, chainId: number, block: number): Promise<number> {
  const [row] = await sql<{ start: string }[]>`
    select coalesce(max(from_block), 0) as start from ranges where chain_id = ${chainId} and from_block <= ${block}`
  return Number(row!.start)
}
