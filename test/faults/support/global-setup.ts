import { rmSync } from 'node:fs'
import { resultsDir, summarizeResults } from './report.js'
import { faultScale, faultSeed } from './scale.js'

/**
 * Clears the previous run's results and, once every fault file ran, prints
 * the table FAULTS.md is written from. FAULTS_SEED is fixed here so every
 * test file of the run (each its own process) shares the seed printed.
 */
export default function setup() {
  rmSync(resultsDir, { recursive: true, force: true })
  process.env.FAULTS_SEED = String(faultSeed)
  process.stdout.write(`\nfault suite: scale ${faultScale}, seed ${faultSeed}\n`)
  return () => {
    process.stdout.write(`\nfault suite results (test-output/faults/results/):\n${summarizeResults()}\n\n`)
  }
}
