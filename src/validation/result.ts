import type { Address, Hex } from 'viem'
import type { Attributed, AttributedCode, CodeRegistry, CodeRole, Malformed, SchemaId } from '../attribution/decode.js'
import type { Registry } from '../registry/register.js'

export type HashType = 'transaction' | 'userOperation'
export const HASH_TYPES: readonly HashType[] = ['transaction', 'userOperation']

/** Where a hash was found: the fields a finding and the answer share. */
type Located = {
  type: HashType
  hash: Hex
  chainId: number
  transactionHash: Hex
  userOpHash?: Hex
  blockNumber: number
  status: 'success' | 'reverted'
}

/**
 * What was found for a hash, from the index or from the chain, before the
 * codes are looked up in the registry. Both sources produce this, so both
 * answer with the same shape and the same meaning.
 */
export type Finding = Located & {
  source: 'index' | 'rpc'
  /** The suffix decoded, a malformed suffix, or undefined when there is none. */
  decoded: Attributed | Malformed | undefined
}

export type CodeResult = { code: string; role: CodeRole; valid: boolean; registered: boolean; walletAddress?: Address }

export type ValidationResult = Located & {
  attributed: boolean
  schemaId?: SchemaId
  codes: CodeResult[]
  /** Schema 1: the custom registry every code belongs to. */
  codeRegistry?: CodeRegistry
  /** Schema 2: custom registries of the app and wallet codes, when the suffix names them. */
  registries?: { app?: CodeRegistry; wallet?: CodeRegistry }
  suffix?: Hex
  suffixGas?: number
  malformed?: { reason: string }
  source: 'index' | 'rpc'
}

/**
 * Codes that belong to another registry (schema 1, or a schema 2 app/wallet
 * code with its own registry) are never "registered" here, whatever their
 * spelling: our registry only speaks for its own codes. Same rule as the
 * indexer's resolve stage, which marks them `custom`.
 */
function hasCustomRegistry(attribution: Attributed, entry: AttributedCode): boolean {
  if (attribution.schemaId === 1) return true
  if (entry.role === 'app') return attribution.registries?.app !== undefined
  if (entry.role === 'wallet') return attribution.registries?.wallet !== undefined
  return false
}

/** One entry per (code, role), in suffix order. */
function distinctEntries(entries: readonly AttributedCode[]): AttributedCode[] {
  const seen = new Set<string>()
  return entries.filter((entry) => {
    const key = `${entry.role}\u0000${entry.code}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

async function describeCodes(attribution: Attributed, registry: Pick<Registry, 'findManyByCode'>): Promise<CodeResult[]> {
  const entries = distinctEntries(attribution.entries)
  const ours = entries.filter((entry) => entry.valid && !hasCustomRegistry(attribution, entry))
  const wallets = await registry.findManyByCode([...new Set(ours.map((entry) => entry.code))])
  return entries.map((entry) => {
    const wallet = ours.includes(entry) ? wallets.get(entry.code) : undefined
    const result: CodeResult = { code: entry.code, role: entry.role, valid: entry.valid, registered: wallet !== undefined }
    if (wallet) result.walletAddress = wallet
    return result
  })
}

/** The public answer for a finding, with every code looked up in our registry (registration is current, not as indexed). */
export async function describeFinding(finding: Finding, registry: Pick<Registry, 'findManyByCode'>): Promise<ValidationResult> {
  const result: ValidationResult = {
    attributed: finding.decoded?.kind === 'attributed',
    type: finding.type,
    hash: finding.hash,
    chainId: finding.chainId,
    transactionHash: finding.transactionHash,
    blockNumber: finding.blockNumber,
    status: finding.status,
    codes: [],
    source: finding.source,
  }
  if (finding.userOpHash) result.userOpHash = finding.userOpHash
  const decoded = finding.decoded
  if (decoded?.kind === 'malformed') {
    result.malformed = { reason: decoded.reason }
    if (decoded.schemaId !== undefined && decoded.schemaId <= 2) result.schemaId = decoded.schemaId as SchemaId
  }
  if (decoded?.kind === 'attributed') {
    result.schemaId = decoded.schemaId
    result.codes = await describeCodes(decoded, registry)
    if (decoded.codeRegistry) result.codeRegistry = decoded.codeRegistry
    if (decoded.registries) result.registries = decoded.registries
    result.suffix = decoded.suffix
    result.suffixGas = decoded.suffixGas
  }
  return result
}
