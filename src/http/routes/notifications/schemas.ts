import { z } from 'zod'
import { InvalidAppUrlError, MAX_APP_URL_LENGTH, normalizeAppUrl } from '../../../notifications/app-url.js'
import { checkVisibleLength, textLengthMessage } from '../../../notifications/text-length.js'
import { errorBodySchema } from '../../errors.js'

/* Request schemas of the notification, admin and platform route groups, and the errors the app endpoints answer. */

const requiredString = (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be a string')

/** An app URL in, its normalized form out (see normalizeAppUrl). */
export const appUrlSchema = z
  .string({ error: requiredString })
  .max(MAX_APP_URL_LENGTH, `must be at most ${MAX_APP_URL_LENGTH} characters`)
  .transform((value, context) => {
    try {
      return normalizeAppUrl(value)
    } catch (error) {
      if (!(error instanceof InvalidAppUrlError)) throw error
      context.addIssue({ code: 'custom', message: error.message })
      return z.NEVER
    }
  })
  .describe('App URL; normalized to scheme + lowercase host + path without trailing slash')

/**
 * Refinement: at most `max` characters as users count them, checked at a
 * cost bounded by `max` (see checkVisibleLength for the caps it adds).
 */
function visibleLengthAtMost(max: number) {
  return (value: string, context: z.core.$RefinementCtx<string>) => {
    const verdict = checkVisibleLength(value, max)
    if (!verdict.ok) context.addIssue({ code: 'custom', message: textLengthMessage(verdict.reason, max), input: value })
  }
}

/** Text whose length is counted as users see it (grapheme clusters), 1..max. */
export function visibleTextSchema(max: number) {
  return z
    .string({ error: requiredString })
    .refine((value) => value.trim().length > 0, 'must not be empty')
    .superRefine(visibleLengthAtMost(max))
}

export function targetPathSchema(max: number) {
  return (
    z
      .string({ error: 'must be a string' })
      .startsWith('/', 'must start with /')
      // `//host` and `/\host` leave the app in a browser: a target path stays on the app
      .refine((value) => !/^\/[/\\]/.test(value), 'must be a path on the app, not //host')
      .superRefine(visibleLengthAtMost(max))
  )
}

export const booleanQuerySchema = z.enum(['true', 'false'], { error: 'must be true or false' }).transform((value) => value === 'true')

/** Statuses every app endpoint may answer besides its own. */
export const appErrorResponses = {
  400: errorBodySchema,
  401: errorBodySchema,
  403: errorBodySchema,
  404: errorBodySchema,
  429: errorBodySchema,
}
