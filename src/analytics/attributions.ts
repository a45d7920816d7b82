import type { Sql } from '../db/client.js'
import { InvalidCursorError } from '../contract/cursor-error.js'
import { eip55, registryColumns, registryLabel } from '../contract/schemas.js'
import { codeAttributionPage, type KeysetPosition } from '../store/attributions.js'

export const DEFAULT_ATTRIBUTIONS_LIMIT = 50
export const MAX_ATTRIBUTIONS_LIMIT = 500

export type AttributionListQuery = {
  code: string
  chainId?: number
  kind?: 'transaction' | 'userOperation'
  status?: 'success' | 'reverted'
  /** One registry namespace as stored (`canonical` or `<chainId>:<lowercase address>`); all when absent. */
  registry?: string
  cursor?: string
  limit: number
}

export type AttributionItem = {
  transactionHash: string
  kind: 'transaction' | 'userOperation'
  userOpHash: string | null
  chainId: number
  blockNumber: number
  timestamp: string
  status: 'success' | 'reverted'
  sender: string
  suffixGas: number
  schemaId: number
  codeStatus: 'registered' | 'unregistered' | 'invalid' | 'custom'
  /** `canonical`, or `<chainId>:<address>` of the custom registry the suffix names. */
  registry: string
  explorerUrl: string | null
}

export type AttributionPage = { code: string; registry?: string; attributions: AttributionItem[]; nextCursor?: string }

/** The keyset position of the last row of a page: opaque to clients, but plain data (no secret needed: it grants nothing). */
function encodeCursor(position: KeysetPosition): string {
  return Buffer.from(`${position.time}|${position.id}`).toString('base64url')
}

/** A block time as encodeCursor writes it: ISO 8601 in UTC with milliseconds and a four-digit year. */
const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/**
 * The position of a cursor encodeCursor wrote, or InvalidCursorError. Only
 * its own spelling is accepted: a time JavaScript reads but PostgreSQL does
 * not (`+275760-09-13T…`, a year past 9999) would otherwise reach the query
 * and fail there (22009) as a 500.
 */
function decodeCursor(cursor: string): KeysetPosition {
  const [time, id, ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split('|')
  const parsedId = Number(id)
  const canonicalTime = time !== undefined && CURSOR_TIME.test(time) && !Number.isNaN(Date.parse(time)) && new Date(time).toISOString() === time
  if (rest.length > 0 || !canonicalTime || id !== String(parsedId) || !Number.isSafeInteger(parsedId) || parsedId < 1) {
    throw new InvalidCursorError()
  }
  return { time, id: parsedId }
}

/** Block explorers of well-known chains; `explorerUrl` in CHAINS overrides or adds. Local devnets have none. */
export const DEFAULT_EXPLORERS: Readonly<Record<number, string>> = {
  1: 'https://etherscan.io',
  10: 'https://optimistic.etherscan.io',
  8453: 'https://basescan.org',
  84532: 'https://sepolia.basescan.org',
  11155111: 'https://sepolia.etherscan.io',
}

export type ExplorerLookup = (chainId: number) => string | undefined

export function createExplorerLookup(chains: ReadonlyArray<{ chainId: number | undefined; explorerUrl?: string | undefined }>): ExplorerLookup {
  const configured = new Map<number, string>()
  for (const chain of chains) if (chain.chainId !== undefined && chain.explorerUrl) configured.set(chain.chainId, chain.explorerUrl.replace(/\/+$/, ''))
  return (chainId) => configured.get(chainId) ?? DEFAULT_EXPLORERS[chainId]
}

/**
 * One page of a code's attributions, newest first (block time, then id),
 * walked by keyset (store/attributions.ts): a page costs the same on the
 * first and the thousandth page, and rows committed meanwhile never shift a
 * page already handed out.
 */
export async function listCodeAttributions(sql: Sql, query: AttributionListQuery, explorerOf: ExplorerLookup): Promise<AttributionPage> {
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor)
  const registry = query.registry === undefined ? undefined : registryColumns(query.registry)
  const { rows: page, more } = await codeAttributionPage(sql, { ...query, registry, after })
  const attributions = page.map((row): AttributionItem => {
    const explorer = explorerOf(row.chain_id)
    return {
      transactionHash: row.tx_hash,
      kind: row.kind,
      userOpHash: row.user_op_hash,
      chainId: row.chain_id,
      blockNumber: Number(row.block_number),
      timestamp: new Date(row.block_timestamp).toISOString(),
      status: row.status,
      // stored as the node spelled it (lowercase for transactions): every address out of the API is EIP-55
      sender: eip55(row.sender),
      suffixGas: row.suffix_gas,
      schemaId: row.schema_id,
      codeStatus: row.code_status,
      registry: row.registry_address === null ? 'canonical' : registryLabel(`${row.registry_chain_id}:${row.registry_address.toLowerCase()}`),
      explorerUrl: explorer ? `${explorer}/tx/${row.tx_hash}` : null,
    }
  })
  const last = page.at(-1)
  return {
    code: query.code,
    ...(query.registry === undefined ? {} : { registry: registryLabel(query.registry) }),
    attributions,
    ...(more && last ? { nextCursor: encodeCursor({ time: new Date(last.block_timestamp).toISOString(), id: Number(last.id) }) } : {}),
  }
}
