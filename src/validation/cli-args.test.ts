import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { errorBody } from '../contract/error-body.js'
import { parseValidateArgs, validateUsage } from './cli-args.js'
import { describeRequestProblem, validationRequestSchema } from './request.js'

/** What the schema answers for the values the command line gave: the API's rules, which the CLI's own check must match. */
function schemaAnswer(hash: string | undefined, type: string | undefined, chain: string | undefined) {
  const request = validationRequestSchema.safeParse({ hash, type: type ?? 'transaction', chainId: chain })
  if (request.success) return { request: request.data }
  const problem = describeRequestProblem(request.error)
  return { exitCode: 64, body: errorBody('invalid_request', `${problem.message}; usage: ${validateUsage}`, problem.field) }
}

function argsOf(hash: string | undefined, type: string | undefined, chain: string | undefined): string[] {
  return [...(hash === undefined ? [] : [hash]), ...(type === undefined ? [] : [`--type=${type}`]), ...(chain === undefined ? [] : [`--chain=${chain}`])]
}

const HASH = `0x${'aB'.repeat(32)}`
const hashes = fc.oneof(
  fc.constantFrom(undefined, HASH, HASH.toUpperCase(), `0X${'a'.repeat(64)}`, `${HASH}0`, HASH.slice(0, 65), ` ${HASH}`, '0x', ''),
  fc.stringMatching(/^0x[0-9a-fA-Fg]{62,66}$/),
  fc.string(),
)
const types = fc.oneof(fc.constantFrom(undefined, 'transaction', 'userOperation', 'Transaction', 'tx', ''), fc.string())
const chains = fc.oneof(
  fc.constantFrom(undefined, '1', '8453', '0', '007', '-1', ' 5 ', '1.5', '1e3', '0x10', '', '9007199254740991', '9007199254740992', '9'.repeat(400)),
  fc.stringMatching(/^\s?\d{1,20}\s?$/),
  fc.string(),
)

describe('attribution validate: the arguments checked without the schema library', () => {
  it('answers every request as validationRequestSchema does: the same request, or the same first problem and message', () => {
    fc.assert(
      fc.property(hashes, types, chains, (hash, type, chain) => {
        // a value starting with '-' would be read as an option by the command line, not as the value
        fc.pre(![hash, type, chain].some((value) => value?.startsWith('-')))
        expect(parseValidateArgs(argsOf(hash, type, chain))).toEqual(schemaAnswer(hash, type, chain))
      }),
      { numRuns: 3_000 },
    )
  })

  it('names the field at fault, in the schema order (type, then hash, then chainId)', () => {
    expect(parseValidateArgs(['0x12', '--type', 'tx', '--chain', 'x'])).toEqual(schemaAnswer('0x12', 'tx', 'x'))
    expect(parseValidateArgs(['0x12', '--chain', 'x'])).toMatchObject({ exitCode: 64, body: { error: { field: 'hash', message: `hash: must be 0x followed by 64 hexadecimal characters; usage: ${validateUsage}` } } })
    expect(parseValidateArgs([HASH, '--chain', '0'])).toMatchObject({ exitCode: 64, body: { error: { field: 'chainId' } } })
    expect(parseValidateArgs(['--type', 'userOperation'])).toEqual(schemaAnswer(undefined, 'userOperation', undefined))
  })

  it('refuses unknown options as node:util parseArgs words it, with the usage', () => {
    expect(parseValidateArgs([HASH, '--bogus'])).toMatchObject({ exitCode: 64, body: { success: false, error: { code: 'invalid_request' } } })
    expect((parseValidateArgs([HASH, '--bogus']) as { body: { error: { message: string } } }).body.error.message).toContain(`; usage: ${validateUsage}`)
  })
})
