import { expect, it } from 'vitest'
import { createRandom } from '../../devnet/suffixes.js'
import { hostileCalldata } from '../faults/support/calldata-fuzz.js'
import { runDifferential } from '../support/differential.js'

/**
 * The small, seeded differential run of `npm test` (issue 11): the codec
 * against ox/erc8021 and the block scanner against JSON.parse with the same
 * filter. The large run with a fresh seed is `npm run test:faults`
 * (test/faults/differential.test.ts); a seed that fails there goes here.
 */
it('5,000 calldata inputs decode as ox reads them, 400 batch responses scan as JSON.parse reads them', () => {
  const result = runDifferential({ random: createRandom(20_261_124), codecInputs: 5_000, batches: 400, hostileCalldata })
  expect(result.disagreements).toEqual([])
  // the scanner still reads most batches itself: giving up on everything would agree trivially
  expect(result.scannerGaveUp).toBeLessThan(result.batches * 0.8)
  expect(result.scannerGaveUp).toBeGreaterThan(0)
})
