/** The 16-byte ERC-8021 marker that ends every attributed calldata. */
export const MARKER_HEX = '80218021802180218021802180218021'
export const MARKER_BYTES = 16

/**
 * True when hex calldata ends with the ERC-8021 marker. This runs on every
 * transaction the indexer sees and almost none carry a suffix, so it is a
 * single tail compare: no slicing, no lowercasing (the marker has no hex
 * letters, so letter case cannot matter), nothing allocated.
 */
export function hasMarker(input: string): boolean {
  return input.length >= 2 + 2 * MARKER_BYTES && input.endsWith(MARKER_HEX)
}

/** The same check on raw bytes. */
export function hasMarkerBytes(input: Uint8Array): boolean {
  const end = input.length
  if (end < MARKER_BYTES) return false
  for (let i = end - MARKER_BYTES; i < end; i += 2) {
    if (input[i] !== 0x80 || input[i + 1] !== 0x21) return false
  }
  return true
}
