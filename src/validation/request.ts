import type { Hex } from 'viem'
import { z } from 'zod'
import { hashSchema } from '../contract/schemas.js'
import { HASH_TYPES, type HashType } from './result.js'

export type ValidationRequest = { type: HashType; hash: Hex; chainId?: number }

/** A chain id from a query string ("8453") or a JSON body (8453). */
const chainIdSchema = z.preprocess(
  (value) => (typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value),
  z
    .number({ error: 'must be a positive integer' })
    .int('must be a positive integer')
    .positive('must be a positive integer')
    .max(Number.MAX_SAFE_INTEGER, 'must be a positive integer'),
)

/** The fields of a validation request, for the query string (GET), the JSON body (POST) and the CLI alike. */
export const validationRequestSchema = z.object(
  {
    type: z.enum(HASH_TYPES as [HashType, ...HashType[]], {
      error: (issue) => (issue.input === undefined ? 'is required' : `must be ${HASH_TYPES.join(' or ')}`),
    }),
    hash: hashSchema,
    chainId: chainIdSchema.optional().describe('May be omitted when the server has exactly one chain'),
  },
  { error: 'must be a JSON object' },
)

/** `field: reason` of the first problem, the shape every 400 uses. */
export function describeRequestProblem(error: z.ZodError): { field: string; message: string } {
  const issue = error.issues[0]!
  const field = issue.path.join('.') || 'request'
  return { field, message: `${field}: ${issue.message}` }
}
