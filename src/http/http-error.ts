/** An error that knows its HTTP status. Routes and guards throw these; the one error handler (errors.ts) renders them. */
export class HttpError extends Error {
  override name = 'HttpError'
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly field?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

export const badRequest = (field: string, reason: string) =>
  new HttpError(400, 'invalid_request', `${field}: ${reason}`, field)
export const notFound = (message: string) => new HttpError(404, 'not_found', message)
