import { eq, sql } from 'drizzle-orm'
import * as OxAddress from 'ox/Address'
import type { Address } from 'viem'
import type { Database } from '../db/client.js'
import { builderCodes } from '../db/schema/index.js'
import { deriveBuilderCode } from './derive.js'
import { createGroupedInsert } from './grouped-insert.js'

/** Candidates tried before giving up; 36^8 codes make even a second attempt rare. */
const MAX_ATTEMPTS = 32

export class BuilderCodeSpaceExhaustedError extends Error {
  override name = 'BuilderCodeSpaceExhaustedError'
  constructor(wallet: Address) {
    super(`No free builder code after ${MAX_ATTEMPTS} candidates for ${wallet}`)
  }
}

export type BuilderCode = { builderCode: string; walletAddress: Address }

export type RegistryOptions = {
  db: Database
  /** Replaceable in tests to force collisions. */
  deriveCandidate?: (wallet: Address, attempt: number) => string
  /** Registrations kept in memory; the mapping never changes once stored, so nothing goes stale. */
  cacheSize?: number
}

/**
 * A stored code never changes and never moves to another wallet, so every
 * pairing read from the database can be remembered without expiry. Only
 * "not registered" is never cached: it can change at any moment.
 */
function createPairCache(limit: number) {
  const codeByWallet = new Map<Address, string>()
  const walletByCode = new Map<string, Address>()
  return {
    remember(builderCode: string, walletAddress: Address) {
      if (codeByWallet.size >= limit) {
        codeByWallet.clear()
        walletByCode.clear()
      }
      codeByWallet.set(walletAddress, builderCode)
      walletByCode.set(builderCode, walletAddress)
    },
    codeOf: (wallet: Address) => codeByWallet.get(wallet),
    walletOf: (code: string) => walletByCode.get(code),
  }
}

export function createRegistry({ db, deriveCandidate = deriveBuilderCode, cacheSize = 100_000 }: RegistryOptions) {
  const cache = createPairCache(cacheSize)
  const insertCandidate = createGroupedInsert(db)

  /**
   * Returns the wallet's builder code, creating it on first call. Safe under
   * any concurrency: `ON CONFLICT DO NOTHING` covers both the code and the
   * wallet unique keys, so racing inserts for one wallet leave one row, and a
   * candidate held by another wallet moves on to the next candidate.
   */
  async function register(walletAddress: string): Promise<BuilderCode & { created: boolean }> {
    // EIP-55, as viem's getAddress (ox: `attribution validate` loads the registry, and viem's index is slow to load)
    const wallet = OxAddress.checksum(walletAddress)
    const known = cache.codeOf(wallet)
    if (known) return { builderCode: known, walletAddress: wallet, created: false }
    // insert first: a new wallet costs one round trip; a stored one conflicts on its wallet key and is read after
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const code = deriveCandidate(wallet, attempt)
      // concurrent new wallets share one multi-row insert and its commit (grouped-insert.ts)
      if (await insertCandidate({ code, wallet })) {
        cache.remember(code, wallet)
        return { builderCode: code, walletAddress: wallet, created: true }
      }
      const existing = await findByWallet(wallet)
      if (existing) return { ...existing, created: false }
    }
    throw new BuilderCodeSpaceExhaustedError(wallet)
  }

  async function findByWallet(wallet: Address): Promise<BuilderCode | undefined> {
    const cached = cache.codeOf(wallet)
    if (cached) return { builderCode: cached, walletAddress: wallet }
    const [row] = await db
      .select({ builderCode: builderCodes.code, walletAddress: builderCodes.walletAddress })
      .from(builderCodes)
      .where(eq(builderCodes.walletAddress, wallet))
    if (!row) return undefined
    cache.remember(row.builderCode, row.walletAddress as Address)
    return { builderCode: row.builderCode, walletAddress: row.walletAddress as Address }
  }

  async function findByCode(code: string): Promise<BuilderCode | undefined> {
    const cached = cache.walletOf(code)
    if (cached) return { builderCode: code, walletAddress: cached }
    const [row] = await db
      .select({ builderCode: builderCodes.code, walletAddress: builderCodes.walletAddress })
      .from(builderCodes)
      .where(eq(builderCodes.code, code))
    if (!row) return undefined
    cache.remember(row.builderCode, row.walletAddress as Address)
    return { builderCode: row.builderCode, walletAddress: row.walletAddress as Address }
  }

  /** Wallets of those `codes` that are registered, in one query. */
  async function findManyByCode(codes: readonly string[]): Promise<Map<string, Address>> {
    const found = new Map<string, Address>()
    const missing: string[] = []
    for (const code of codes) {
      const wallet = cache.walletOf(code)
      if (wallet) found.set(code, wallet)
      else missing.push(code)
    }
    if (missing.length === 0) return found
    const rows = await db
      .select({ code: builderCodes.code, wallet: builderCodes.walletAddress })
      .from(builderCodes)
      .where(sql`${builderCodes.code} = any(${sql.param(missing)}::text[])`)
    for (const row of rows) {
      cache.remember(row.code, row.wallet as Address)
      found.set(row.code, row.wallet as Address)
    }
    return found
  }

  return { register, findByWallet, findByCode, findManyByCode }
}

export type Registry = ReturnType<typeof createRegistry>
