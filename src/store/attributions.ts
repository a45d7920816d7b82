import type { Sql } from '../db/client.js'

/** Reads of attribution rows: a code's rows a page at a time, never a scan (by hash: validation/index-lookup.ts). */

/** Where a keyset page ends: the last row's block time (ISO) and id. */
export type KeysetPosition = { time: string; id: number }

export type StoredAttribution = {
  id: number
  tx_hash: string
  kind: 'transaction' | 'userOperation'
  user_op_hash: string | null
  chain_id: number
  block_number: number
  block_timestamp: string
  status: 'success' | 'reverted'
  sender: string
  suffix_gas: number
  schema_id: number
  code_status: 'registered' | 'unregistered' | 'invalid' | 'custom'
  registry_chain_id: number | null
  registry_address: string | null
}

export type CodeAttributionQuery = {
  code: string
  chainId?: number | undefined
  kind?: 'transaction' | 'userOperation' | undefined
  status?: 'success' | 'reverted' | undefined
  /** One registry namespace: null the canonical one, else a custom registry (address lowercase). */
  registry?: { chainId: number; address: string } | null | undefined
  /** Rows after this position (older), for the next page. */
  after?: KeysetPosition | undefined
  limit: number
}

/**
 * Up to `limit` of a code's rows, newest first (block time, then id), after
 * `after`, walked on the `(code, block_timestamp desc, id desc)` index
 * (attributions_code_page_idx); `more` says whether another page follows.
 */
export async function codeAttributionPage(sql: Sql, query: CodeAttributionQuery): Promise<{ rows: StoredAttribution[]; more: boolean }> {
  const { after } = query
  // the page's ids come from the index alone (filters on its included columns); only the rows returned are read
  const rows = await sql<StoredAttribution[]>`
    with page as (
      select id from attributions
      where code = ${query.code}
        ${after ? sql`and (block_timestamp, id) < (${after.time}::timestamptz, ${after.id})` : sql``}
        ${query.chainId === undefined ? sql`` : sql`and chain_id = ${query.chainId}`}
        ${query.kind === undefined ? sql`` : sql`and kind = ${query.kind}`}
        ${query.status === undefined ? sql`` : sql`and status = ${query.status}`}
        ${
          query.registry === undefined
            ? sql``
            : query.registry === null
              ? sql`and registry_address is null`
              : sql`and registry_chain_id = ${query.registry.chainId} and lower(registry_address) = ${query.registry.address}`
        }
      -- spelled as the index is: plain DESC means NULLS FIRST, and the planner would sort a scan instead
      order by block_timestamp desc nulls last, id desc nulls last
      limit ${query.limit + 1}
    )
    select a.id, tx_hash, kind, user_op_hash, chain_id, block_number, block_timestamp, status, sender, suffix_gas, schema_id,
           code_status, registry_chain_id, registry_address
    from page join attributions a using (id)
    order by block_timestamp desc nulls last, a.id desc nulls last`
  return { rows: rows.slice(0, query.limit), more: rows.length > query.limit }
}
