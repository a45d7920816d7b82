import { parentPort, workerData } from 'node:worker_threads'
import { runCalldataFuzz } from './calldata-fuzz.js'

/** Worker-thread entry: one share of the hostile calldata, posted back as a result. */
parentPort!.postMessage(runCalldataFuzz(workerData as { seed: number; count: number }))
