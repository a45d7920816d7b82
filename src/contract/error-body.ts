import { z } from 'zod'

/* The HTTP contract's shapes that more than the HTTP layer speaks: the API answers with them, the CLI prints them. */

/**
 * The one error body every endpoint answers with:
 * `{ "success": false, "error": { "code", "message", "field"? } }`.
 */
export const errorBodySchema = z
  .object({
    success: z.literal(false),
    error: z.object({
      code: z.string().describe('Stable machine-readable error code'),
      message: z.string().describe('What went wrong, naming the field when one is at fault'),
      field: z.string().optional().describe('The request field at fault, when there is one'),
    }),
  })
  .meta({ id: 'Error' })

export type ErrorBody = z.infer<typeof errorBodySchema>

/** The error body for a code, a message and the field at fault. */
export function errorBody(code: string, message: string, field?: string): ErrorBody {
  return { success: false, error: field ? { code, message, field } : { code, message } }
}
