/*
 * The arguments of `attribution validate`, apart from the validation itself: the CLI checks them
 * before it reads the configuration or connects anywhere, so a mistyped hash is answered at once.
 */
import { parseArgs } from 'node:util'
import { errorBody, type ErrorBody } from '../contract/error-body.js'
import { describeRequestProblem, validationRequestSchema, type ValidationRequest } from './request.js'

import { EXIT, validateUsage } from './exit-codes.js'

export { EXIT, validateUsage }

/**
 * The request of `attribution validate <args>`, or the usage error to print and its exit status:
 * checked before anything else is loaded or connected, so a mistyped hash is answered at once.
 */
export function parseValidateArgs(args: string[]): { request: ValidationRequest } | { exitCode: number; body: ErrorBody } {
  let parsed
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { type: { type: 'string', short: 't' }, chain: { type: 'string', short: 'c' } } })
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
  return { request: request.data }
}
