import { z } from 'zod'

/**
 * VALIDATE_RPC_URL: the node validation by hash asks, so anonymous lookups
 * spend a quota of their own and never the indexer's (a validator sharing the
 * indexer's provider key slows indexing with every 429 it draws).
 *
 * - `https://…`: the node of the one configured chain;
 * - `8453=https://…,10=https://…`: per chain id; chains not listed use their own RPC.
 */
export type ValidateRpcUrls = { only: string; byChain?: undefined } | { only?: undefined; byChain: ReadonlyMap<number, string> }

function isHttpUrl(value: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol)
  } catch {
    return false
  }
}

export const validateRpcUrlSchema = z.string().transform((value, context): ValidateRpcUrls => {
  const text = value.trim()
  if (isHttpUrl(text)) return { only: text }
  const byChain = new Map<number, string>()
  for (const pair of text.split(',')) {
    const match = /^\s*(\d+)\s*=\s*(\S+)\s*$/.exec(pair)
    const chainId = match ? Number(match[1]) : NaN
    if (!match || !Number.isSafeInteger(chainId) || chainId < 1 || !isHttpUrl(match[2]!) || byChain.has(chainId)) {
      context.addIssue({ code: 'custom', message: 'must be an http(s) URL, or chainId=url pairs separated by commas (each chain once)' })
      return z.NEVER
    }
    byChain.set(chainId, match[2]!)
  }
  return { byChain }
})
