import type { Address } from 'viem'
import type { Sql } from '../db/connect.js'
import type { Registry } from '../registry/register.js'

/**
 * The registry's findManyByCode for `attribution validate`, in plain SQL: the registry module
 * (register.ts) brings drizzle and the schema, over a hundred modules, for one query a one-shot
 * command asks once. Its cache is the daemon's concern; the wallets are stored checksummed.
 */
export function registeredWallets(sql: Sql): Pick<Registry, 'findManyByCode'> {
  return {
    async findManyByCode(codes) {
      const found = new Map<string, Address>()
      if (codes.length === 0) return found
      const rows = await sql<{ code: string; wallet_address: Address }[]>`select code, wallet_address from builder_codes where code = any(${sql.array([...codes])}::text[])`
      for (const row of rows) found.set(row.code, row.wallet_address)
      return found
    },
  }
}
