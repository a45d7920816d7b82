import { z } from 'zod'

/**
 * The query parameters of every paged or limited listing, one rule for all:
 * a `limit` over the route's maximum is refused (400 naming `limit`), never
 * silently cut — a client asking for 1,000 rows and getting 500 back could
 * not tell a short page from the end. The OpenAPI description states the
 * default and the maximum.
 */
export function pageLimitSchema(options: { max: number; fallback: number }) {
  const { max, fallback } = options
  const notAnInteger = `must be an integer from 1 to ${max}`
  return z.coerce
    .number({ error: notAnInteger })
    .int(notAnInteger)
    .min(1, notAnInteger)
    .max(max, `must be at most ${max}`)
    .default(fallback)
    .describe(`Page size: 1 to ${max}, default ${fallback}; more than ${max} is refused (400)`)
}

/** A cursor from a previous page: opaque, at most 200 characters (a longer one cannot be one this service issued). */
export const cursorSchema = z
  .string()
  .max(200, 'is not a cursor issued for this listing')
  .describe('Opaque cursor from a previous page (`nextCursor`)')
