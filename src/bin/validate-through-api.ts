/*
 * `attribution validate <hash> --api <url>`: the answer of a running daemon's API
 * (GET /v1/attribution/validate) instead of a validation in this process. The
 * daemon has its database pool, chains and caches ready; this command then loads
 * nothing but node's argument parser and fetch, and answers in a fraction of the time.
 * The daemon checks the hash, type and chain (a 400 is exit 64, with its message).
 */

/** Whether these `validate` arguments ask for the daemon's answer. */
export const asksTheApi = (args: readonly string[]) => args.some((arg) => arg === '--api' || arg.startsWith('--api='))

type Query = { hash?: string | undefined; type: string; chain?: string | undefined; api: URL }

function usageError(message: string, out: { write(text: string): unknown }): number {
  out.write(`${JSON.stringify({ success: false, error: { code: 'invalid_request', message: `${message}; usage: ${validateUsage}` } }, null, 2)}\n`)
  return EXIT.usage
}

function parseQuery(args: string[]): Query | string {
  let parsed
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { type: { type: 'string', short: 't' }, chain: { type: 'string', short: 'c' }, api: { type: 'string' } } })
  } catch (error) {
    return (error as Error).message
  }
  let api: URL | undefined
  try {
    api = new URL(parsed.values.api ?? '')
  } catch {
    api = undefined
  }
  if (!api || (api.protocol !== 'http:' && api.protocol !== 'https:')) return "--api: must be the API's http(s) base URL, e.g. http://127.0.0.1:3000"
  return { hash: parsed.positionals[0], type: parsed.values.type ?? 'transaction', chain: parsed.values.chain, api }
}
import { parseArgs } from 'node:util'
import { EXIT, validateUsage } from '../validation/exit-codes.js'

/** Printed by cli.ts as one line, exit 78, like start-up's StartupError (known there by name: startup.ts loads the logger). */
class StartupError extends Error {
  override name = 'StartupError'
}

/** The daemon may ask its node for a hash it has not indexed: its own RPC timeout (10 s) and some margin. */
const API_ANSWER_MS = 30_000

/** Exit statuses by the API's status codes, as the in-process command exits for the same outcomes. */
function exitCodeOf(status: number, body: { attributed?: unknown }): number {
  if (status === 200) return body.attributed === true ? EXIT.attributed : EXIT.notAttributed
  if (status === 404) return EXIT.notFound
  if (status === 400) return EXIT.usage
  // 502/504 (the node), 503 (busy), 429 (this client's share of node lookups)
  return EXIT.unavailable
}

/** The code of a failed connection (ECONNREFUSED …), found in fetch's causes (an AggregateError when every address failed). */
function connectionCode(error: unknown): string | undefined {
  let current = error as { code?: unknown; cause?: unknown; errors?: unknown[] } | undefined
  for (let depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === 'string') return current.code
    current = (current.cause ?? current.errors?.[0]) as typeof current
  }
  return undefined
}

/** Prints the API's JSON answer and returns the exit status; a daemon that does not answer is one line, exit 78. */
export async function validateThroughApi(args: string[], out: { write(text: string): unknown }): Promise<number> {
  const query = parseQuery(args)
  if (typeof query === 'string') return usageError(query, out)
  const url = new URL('/v1/attribution/validate', query.api)
  if (query.hash !== undefined) url.searchParams.set('hash', query.hash)
  url.searchParams.set('type', query.type)
  if (query.chain !== undefined) url.searchParams.set('chainId', query.chain)
  let response: Response
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(API_ANSWER_MS), headers: { accept: 'application/json' } })
  } catch (error) {
    const code = (error as Error).name === 'TimeoutError' ? 'ETIMEDOUT' : (connectionCode(error) ?? 'UNKNOWN')
    throw new StartupError(`--api: no answer from ${url.host} (${code}): start the daemon (npm start) or leave out --api`)
  }
  const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined
  if (!body || typeof body !== 'object') throw new StartupError(`--api: ${url.host} answered ${response.status} without the API's JSON: is it the attribution API?`)
  out.write(`${JSON.stringify(body, null, 2)}\n`)
  return exitCodeOf(response.status, body)
}
