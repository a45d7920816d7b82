import { expect, it } from 'vitest'
import { createRandom } from '../../devnet/random.js'
import { runDifferential } from '../support/differential.js'
import { hostileCalldata } from './support/calldata-fuzz.js'
import { createFaultReport } from './support/report.js'
import { faultSeed, knobs } from './support/scale.js'

const report = createFaultReport({
  fault: '8-differential',
  title: '8. Differential: codec vs ox, scanner vs JSON.parse, EntryPoint reader vs viem',
  checked:
    'calldata (the hostile-calldata mix plus schema-2 integer and hex chain ids up to 2^53, codes with U+FFFD, NUL and bytes that are not UTF-8, 0X and upper case) ' +
    'decoded by the codec and by ox/erc8021: the same codes and registry chain ids, refusals only where ox refuses or where the README says the codec refuses on purpose; ' +
    'batch responses of full blocks (escaped quotes, unicode-escaped keys, brackets in strings, mixed-case EntryPoint addresses, missing inputs, shuffled answers) read by the scanner ' +
    'and by JSON.parse with the same filter: identical blocks, or ScanFailed (never another error); ' +
    'EntryPoint 0.6 and 0.7/0.8 bundles (handleOps, handleAggregatedOps) encoded by viem, valid or mutated (offsets, lengths, digits, cut short, capitals), and UserOperationEvent logs (success 2, cut data, missing topic): ' +
    'the ops and outcomes viem decodes, none where viem refuses',
  testFile: 'test/faults/differential.test.ts',
})

it(`${knobs.differentialCodecInputs.toLocaleString('en')} calldata inputs vs ox, ${knobs.differentialBatches.toLocaleString('en')} batches vs JSON.parse, ${knobs.differentialBundles.toLocaleString('en')} bundles vs viem: 0 disagreements`, () => {
  const started = Date.now()
  const result = runDifferential({
    random: createRandom(faultSeed + 8),
    codecInputs: knobs.differentialCodecInputs,
    batches: knobs.differentialBatches,
    bundles: knobs.differentialBundles,
    hostileCalldata,
  })
  report.record({
    trial: 1,
    lost: 0,
    doubled: 0,
    inputs: result.codecInputs + result.batches + result.bundles,
    ok: result.disagreementCount === 0,
    durationMs: Date.now() - started,
    details: { ...result },
  })
  expect(result.disagreements).toEqual([])
  expect(result.scannerGaveUp).toBeLessThan(result.batches * 0.8)
})
