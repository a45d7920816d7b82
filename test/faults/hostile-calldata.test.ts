import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { expect, it } from 'vitest'
import type { CalldataFuzzResult } from './support/calldata-fuzz.js'
import { createFaultReport } from './support/report.js'
import { faultSeed, knobs } from './support/scale.js'

const report = createFaultReport({
  fault: '6-hostile-calldata',
  title: '6. Hostile calldata',
  checked:
    'decodeAttribution and detectCandidate on valid ox-built suffixes (schemas 0/1/2, odd codes, registries, metadata), the same mutated ' +
    '(bit flips, truncations, length/schema bytes rewritten, bad UTF-8, odd and non-hex digits, appended suffixes), random bytes ending in the ' +
    'marker, and EntryPoint 0.6/0.7 handleOps/handleAggregatedOps bundles carrying them (half of them mutated): 0 throws, invariants of every ' +
    'attributed result (suffix is the tail, gas per EIP-2028, codes equal what ox reads from the same suffix), every valid suffix round-trips',
  testFile: 'test/faults/hostile-calldata.test.ts',
})

/** One share of the inputs in a worker thread (TypeScript through tsx, like the CLI), so the shares run on every core. */
function runShare(seed: number, count: number): Promise<CalldataFuzzResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./support/calldata-worker.mjs', import.meta.url), {
      workerData: { seed, count },
    })
    worker.once('message', resolve)
    worker.once('error', reject)
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`calldata worker exited with ${code}`))
    })
  })
}

function merge(results: CalldataFuzzResult[]): CalldataFuzzResult {
  const total: CalldataFuzzResult = {
    inputs: 0,
    made: { valid: 0, mutated: 0, random: 0, bundles: 0 },
    decoded: { none: 0, malformed: 0, attributed: 0 },
    roundTrips: 0,
    throws: 0,
    failures: [],
  }
  for (const result of results) {
    total.inputs += result.inputs
    for (const key of Object.keys(total.made) as Array<keyof CalldataFuzzResult['made']>) total.made[key] += result.made[key]
    for (const key of Object.keys(total.decoded) as Array<keyof CalldataFuzzResult['decoded']>) total.decoded[key] += result.decoded[key]
    total.roundTrips += result.roundTrips
    total.throws += result.throws
    total.failures.push(...result.failures)
  }
  return total
}

it(`${knobs.calldataInputs.toLocaleString('en')} hostile calldata inputs: 0 throws, every valid suffix round-trips`, async () => {
  const started = Date.now()
  const shares = Math.max(1, Math.min(4, availableParallelism()))
  const perShare = Math.ceil(knobs.calldataInputs / shares)
  const result = merge(await Promise.all(Array.from({ length: shares }, (_, i) => runShare(faultSeed + i, perShare))))
  const roundTripFailures = result.failures.filter((failure) => failure.kind === 'round-trip').length
  report.record({
    trial: 1,
    lost: roundTripFailures,
    doubled: 0,
    inputs: result.inputs,
    ok: result.failures.length === 0,
    durationMs: Date.now() - started,
    details: { ...result, failures: result.failures.slice(0, 5) },
  })
  expect(result.inputs).toBeGreaterThanOrEqual(knobs.calldataInputs)
  // the mix really exercised every path
  expect(result.made.bundles).toBeGreaterThan(knobs.calldataInputs / 50)
  expect(result.decoded.attributed).toBeGreaterThan(knobs.calldataInputs / 10)
  expect(result.decoded.malformed).toBeGreaterThan(knobs.calldataInputs / 10)
  expect(result.failures).toEqual([])
  expect(result.throws).toBe(0)
})
