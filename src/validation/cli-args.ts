/*
 * The arguments of `attribution validate`, apart from the validation itself: the CLI checks them
 * before it reads the configuration or connects anywhere, so a mistyped hash is answered at once.
 */
import { parseArgs } from 'node:util'
import { errorBody, type ErrorBody } from '../contract/error-body.js'
import { describeRequestProblem, validationRequestSchema, type ValidationRequest } from './request.js'

export const validateUsage = 'validate <hash> [--type transaction|userOperation] [--chain <chainId>] [--api <url>]'

/** Exit statuses: 0 attributed; 1 found but not attributed, or not found; 64 bad input; 69 node unreachable. */
export const EXIT = { attributed: 0, notAttributed: 1, notFound: 1, usage: 64, unavailable: 69 } as const

/**
 * The request of `attribution validate <args>`, or the usage error to print and its exit status:
 * checked before anything else is loaded or connected, so a mistyped hash is answered at once.
 */
export function parseValidateArgs(args: string[]): { request: ValidationRequest; api?: URL } | { exitCode: number; body: ErrorBody } {
  let parsed
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { type: { type: 'string', short: 't' }, chain: { type: 'string', short: 'c' }, api: { type: 'string' } } })
  } catch (error) {
    return { exitCode: EXIT.usage, body: errorBody('invalid_request', `${(error as Error).message}; usage: ${validateUsage}`) }
  }
  const request = validationRequestSchema.safeParse({
    hash: parsed.positionals[0],
    type: parsed.values.type ?? 'transaction',
    chainId: parsed.values.chain,
  })
  if (!request.success) {
    const problem = describeRequestProblem(request.error)
    return { exitCode: EXIT.usage, body: errorBody('invalid_request', `${problem.message}; usage: ${validateUsage}`, problem.field) }
  }
  if (parsed.values.api === undefined) return { request: request.data }
  const api = apiUrl(parsed.values.api)
  if (!api) return { exitCode: EXIT.usage, body: errorBody('invalid_request', `--api: must be the API's http(s) base URL, e.g. http://127.0.0.1:3000; usage: ${validateUsage}`, 'api') }
  return { request: request.data, api }
}

function apiUrl(value: string): URL | undefined {
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined
  } catch {
    return undefined
  }
}

