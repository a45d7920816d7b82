import { expect, it } from 'vitest'
import { createRandom } from '../../devnet/random.js'
import { hostileCalldata } from '../faults/support/calldata-fuzz.js'
import { runDifferential } from '../support/differential.js'

/**
 * The small, seeded differential run of `npm test` (issue 11): the codec
 * against ox/erc8021, the block scanner against JSON.parse with the same
 * filter, the EntryPoint reader against viem's decoders. The large run with a fresh seed is `npm run test:faults`
 * (test/faults/differential.test.ts); a seed that fails there goes here.
 */
it('5,000 calldata inputs decode as ox reads them, 400 batch responses scan as JSON.parse reads them, 2,000 bundles and receipts read as viem reads them', () => {
  const result = runDifferential({ random: createRandom(20_261_124), codecInputs: 5_000, batches: 400, bundles: 2_000, hostileCalldata })
  expect(result.disagreements).toEqual([])
  // the EntryPoint reader reads the valid bundles itself and leaves the broken ones to viem
  expect(result.bundlesReadFast).toBeGreaterThan(result.bundles * 0.4)
  expect(result.bundlesReadFast).toBeLessThan(result.bundles)
  // the scanner still reads most batches itself: giving up on everything would agree trivially
  expect(result.scannerGaveUp).toBeLessThan(result.batches * 0.8)
  expect(result.scannerGaveUp).toBeGreaterThan(0)
})
