/*
 * The arguments of `attribution validate`, apart from the validation itself: the CLI checks them
 * before it reads the configuration or connects anywhere, so a mistyped hash is answered at once.
 *
 * Checked here by hand, not with validationRequestSchema (request.ts): the schema library and the
 * contract's schemas are about 120 modules, most of a usage error's time. The rules and messages are
 * the schema's, field by field and in its order; cli-args.test.ts holds the two to the same answers.
 */
import { parseArgs } from 'node:util'
import type { ErrorBody } from '../contract/error-body.js'
import type { ValidationRequest } from './request.js'
import { HASH_TYPES, type HashType } from './result.js'

import { EXIT, validateUsage } from './exit-codes.js'

export { EXIT, validateUsage }

/** The API's error body, as contract/error-body.ts's errorBody builds it: that module loads the schema library. */
export function errorBodyOf(code: string, message: string, field?: string): ErrorBody {
  return { success: false, error: field ? { code, message, field } : { code, message } }
}

const invalidRequest = (message: string, field?: string) => errorBodyOf('invalid_request', message, field)

/** As request.ts's chainIdSchema: digits only (spaces around allowed), a positive safe integer. */
function chainIdOf(value: string): number | undefined {
  if (!/^\d+$/.test(value.trim())) return undefined
  const id = Number(value)
  return Number.isInteger(id) && id > 0 && id <= Number.MAX_SAFE_INTEGER ? id : undefined
}

/** The first problem, in the schema's field order (type, hash, chainId), as `field: reason`; or the request. */
function checkRequest(hash: string | undefined, type: string, chain: string | undefined): ValidationRequest | { field: string; message: string } {
  if (!(HASH_TYPES as readonly string[]).includes(type)) return { field: 'type', message: `must be ${HASH_TYPES.join(' or ')}` }
  if (hash === undefined) return { field: 'hash', message: 'is required' }
  if (!/^0x[0-9a-fA-F]{64}$/.test(hash)) return { field: 'hash', message: 'must be 0x followed by 64 hexadecimal characters' }
  const chainId = chain === undefined ? undefined : chainIdOf(chain)
  if (chain !== undefined && chainId === undefined) return { field: 'chainId', message: 'must be a positive integer' }
  const request: ValidationRequest = { type: type as HashType, hash: hash.toLowerCase() as `0x${string}` }
  if (chainId !== undefined) request.chainId = chainId
  return request
}

/**
 * The request of `attribution validate <args>`, or the usage error to print and its exit status:
 * checked before anything else is loaded or connected, so a mistyped hash is answered at once.
 */
export function parseValidateArgs(args: string[]): { request: ValidationRequest } | { exitCode: number; body: ErrorBody } {
  let parsed
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { type: { type: 'string', short: 't' }, chain: { type: 'string', short: 'c' } } })
  } catch (error) {
    return { exitCode: EXIT.usage, body: invalidRequest(`${(error as Error).message}; usage: ${validateUsage}`) }
  }
  const checked = checkRequest(parsed.positionals[0], parsed.values.type ?? 'transaction', parsed.values.chain)
  if ('field' in checked) return { exitCode: EXIT.usage, body: invalidRequest(`${checked.field}: ${checked.message}; usage: ${validateUsage}`, checked.field) }
  return { request: checked }
}
