import type { Address } from 'viem'
import type { AttributedCode, Attributed, CodeRegistry, Resolution } from '../attribution/decode.js'
import type { Registry } from '../registry/register.js'

export type ResolverOptions = {
  /** Remembers registered codes itself (a code never changes owner). */
  registry: Pick<Registry, 'findManyByCode'>
  /** A code not registered yet may be registered any moment: remember "unregistered" only briefly. */
  negativeTtlMs?: number
  maxEntries?: number
}

/** The custom registry a code points to, if its suffix names one for it. */
function customRegistryOf(attribution: Attributed, entry: AttributedCode): CodeRegistry | undefined {
  if (attribution.schemaId === 1) return attribution.codeRegistry
  if (entry.role === 'app') return attribution.registries?.app
  if (entry.role === 'wallet') return attribution.registries?.wallet
  return undefined
}

const INVALID: Resolution = Object.freeze({ status: 'invalid', wallet: null, registry: null })

/**
 * Resolve stage: what each code means. Invalid codes and codes of a custom
 * registry are decided from the suffix alone; the rest are looked up in our
 * registry, many at once. The registry remembers registered codes; this
 * remembers unregistered ones for a short while, so the long tail of
 * unregistered codes costs one query per TTL rather than one per range.
 */
export function createCodeResolver({ registry, negativeTtlMs = 15_000, maxEntries = 100_000 }: ResolverOptions) {
  const unregisteredUntil = new Map<string, number>()

  async function lookup(codes: Iterable<string>): Promise<Map<string, Address | null>> {
    const now = Date.now()
    const toAsk = [...codes].filter((code) => (unregisteredUntil.get(code) ?? 0) <= now)
    const found = toAsk.length > 0 ? await registry.findManyByCode(toAsk) : new Map<string, Address>()
    if (unregisteredUntil.size + toAsk.length > maxEntries) unregisteredUntil.clear()
    for (const code of toAsk) if (!found.has(code)) unregisteredUntil.set(code, now + negativeTtlMs)
    return found
  }

  /** Resolutions of every code of every attribution, keyed by `code`, fetched in one round trip. */
  async function resolve(attributions: readonly Attributed[]): Promise<(attribution: Attributed, entry: AttributedCode) => Resolution> {
    const toLookUp = new Set<string>()
    for (const attribution of attributions) {
      for (const entry of attribution.entries) {
        if (entry.valid && !customRegistryOf(attribution, entry)) toLookUp.add(entry.code)
      }
    }
    const wallets = await lookup(toLookUp)
    // one object per code of our registry, shared by its rows: a batch crosses to the commit thread by structured
    // clone, which copies a shared object once (threaded-store.ts)
    const ours = new Map<string, Resolution>()
    return (attribution, entry) => {
      if (!entry.valid) return INVALID
      const custom = customRegistryOf(attribution, entry)
      if (custom) return { status: 'custom', wallet: null, registry: custom }
      let resolution = ours.get(entry.code)
      if (resolution === undefined) {
        const wallet = wallets.get(entry.code) ?? null
        ours.set(entry.code, (resolution = { status: wallet ? 'registered' : 'unregistered', wallet, registry: null }))
      }
      return resolution
    }
  }

  return { resolve }
}

export type CodeResolver = ReturnType<typeof createCodeResolver>
