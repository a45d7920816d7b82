/** The onchain registry's rule for a builder code: 1 to 32 characters of 0-9, a-z and _. */
export const VALID_CODE = /^[0-9a-z_]{1,32}$/

export function isValidCode(code: string): boolean {
  return VALID_CODE.test(code)
}
