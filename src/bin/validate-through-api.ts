/*
 * `attribution validate <hash> --api <url>`: the answer of a running daemon's API
 * (GET /v1/attribution/validate) instead of a validation in this process. The
 * daemon has its database pool, chains and caches ready; this command then loads
 * nothing but the argument parser and fetch, and answers in a fraction of the time.
 */
import { EXIT } from '../validation/cli-args.js'
import type { ValidationRequest } from '../validation/request.js'

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
export async function validateThroughApi(api: URL, request: ValidationRequest, out: { write(text: string): unknown }): Promise<number> {
  const url = new URL('/v1/attribution/validate', api)
  url.searchParams.set('hash', request.hash)
  url.searchParams.set('type', request.type)
  if (request.chainId !== undefined) url.searchParams.set('chainId', String(request.chainId))
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
