/**
 * The one error of every paged listing (analytics attributions, notification
 * users, the platform inbox) for a cursor it did not hand out: altered,
 * taken from another listing, or forged with a position no row can have.
 * The API answers 400 naming `cursor`; nothing reaches the database.
 */
export class InvalidCursorError extends Error {
  override name = 'InvalidCursorError'
  readonly field = 'cursor'
  readonly reason = 'is not a cursor issued for this listing'
  constructor() {
    super('cursor: is not a cursor issued for this listing')
  }
}
