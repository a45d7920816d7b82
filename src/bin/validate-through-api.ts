/*
 * `attribution validate <hash> --api <url>`: the answer of a running daemon's API
 * (GET /v1/attribution/validate) instead of a validation in this process. The
 * daemon has its database pool, chains and caches ready; this command then loads
 * nothing but node's argument parser and HTTP client, and answers in a fraction of the time.
 * The daemon checks the hash, type and chain (a 400 is exit 64, with its message).
 *
 * node:http, not fetch: fetch is Node's bundled undici, loaded (and its WebAssembly
 * HTTP parser compiled) at the first call, ~190 ms of a ~300 ms command on the
 * reference machine; node:http parses with the native parser already in the binary.
 */
import type { IncomingMessage } from 'node:http'
import { parseArgs } from 'node:util'
import { EXIT, validateUsage } from '../validation/exit-codes.js'

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

/** The code of a failed connection (ECONNREFUSED …), found in the error's causes (an AggregateError when every address failed). */
function connectionCode(error: unknown): string | undefined {
  let current = error as { code?: unknown; cause?: unknown; errors?: unknown[] } | undefined
  for (let depth = 0; current && depth < 5; depth++) {
    if (typeof current.code === 'string') return current.code
    current = (current.cause ?? current.errors?.[0]) as typeof current
  }
  return undefined
}

/** A proxy in front of the API may redirect (http to https, a path prefix): followed as fetch follows them, at most as often. */
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
const MAX_REDIRECTS = 20

type Answer = { status: number; location?: string | undefined; text: string }

/** One GET: its status, Location and body; rejects with the socket's error, or one coded ETIMEDOUT once `deadline` (Date.now()) passes. */
async function getOnce(url: URL, deadline: number): Promise<Answer> {
  // https only when asked: node:https loads TLS
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http')
  return new Promise<Answer>((resolve, reject) => {
    let timedOut = false
    const fail = (error: unknown) => {
      clearTimeout(timer)
      // once timed out, whatever the destroyed socket reports (ECONNRESET …) is the timeout
      reject(timedOut ? Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' }) : error)
    }
    const call = request(url, { headers: { accept: 'application/json' } }, (response: IncomingMessage) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.once('error', fail)
      response.once('end', () => {
        clearTimeout(timer)
        resolve({ status: response.statusCode ?? 0, location: response.headers.location, text: Buffer.concat(chunks).toString('utf8') })
      })
    })
    const timer = setTimeout(() => {
      timedOut = true
      call.destroy(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' }))
    }, Math.max(0, deadline - Date.now()))
    call.once('error', fail)
    call.end()
  })
}

/** The answer at `url` after any redirects. */
async function get(url: URL, deadline: number): Promise<Answer> {
  for (let redirects = 0; ; redirects++) {
    const answer = await getOnce(url, deadline)
    if (!REDIRECT_STATUSES.has(answer.status) || !answer.location || redirects === MAX_REDIRECTS) return answer
    url = new URL(answer.location, url)
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Prints the API's JSON answer and returns the exit status; a daemon that does not answer is one line, exit 78. */
export async function validateThroughApi(args: string[], out: { write(text: string): unknown }, answerWithinMs = API_ANSWER_MS): Promise<number> {
  const query = parseQuery(args)
  if (typeof query === 'string') return usageError(query, out)
  const url = new URL('/v1/attribution/validate', query.api)
  if (query.hash !== undefined) url.searchParams.set('hash', query.hash)
  url.searchParams.set('type', query.type)
  if (query.chain !== undefined) url.searchParams.set('chainId', query.chain)
  let response: Answer
  try {
    response = await get(url, Date.now() + answerWithinMs)
  } catch (error) {
    throw new StartupError(`--api: no answer from ${url.host} (${connectionCode(error) ?? 'UNKNOWN'}): start the daemon (npm start) or leave out --api`)
  }
  const body = parseJson(response.text) as Record<string, unknown> | undefined
  if (!body || typeof body !== 'object') throw new StartupError(`--api: ${url.host} answered ${response.status} without the API's JSON: is it the attribution API?`)
  out.write(`${JSON.stringify(body, null, 2)}\n`)
  return exitCodeOf(response.status, body)
}
