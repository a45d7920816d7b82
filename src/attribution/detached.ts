/**
 * A copy of a string that shares no memory with the string it was cut
 * from. V8 keeps substrings — and JSON.parse's string values — as views of
 * their source: a transaction hash kept from a parsed transaction would
 * otherwise pin its whole JSON (kilobytes of calldata), and a remembered
 * suffix the megabyte-sized batch it was read from.
 */
export function detached<T extends string>(text: T): T {
  return Buffer.from(text, 'latin1').toString('latin1') as T
}
