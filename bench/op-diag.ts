import { startReplayProcess } from './chain/replay-process.js'
import { profileSpec, type ProfileName } from './chain/node-profiles.js'
import { createRpc } from '../src/rpc/client.js'

const replay = await startReplayProcess({ dir: process.env.DIAG_DIR! })
try {
  await replay.setProfile(profileSpec(process.argv[2] as ProfileName))
  await replay.release({ head: 1000 })
  const started = performance.now()
  const t = () => ((performance.now() - started) / 1000).toFixed(1)
  const rpc = createRpc({
    url: replay.url, timeoutMs: 10_000, batchSize: 50,
    observer: { operatingPoint: (r) => console.log(t(), JSON.stringify({ b: r.batch, k: r.inFlight, s: r.settled, mibps: (r.bytesPerSecond / 2 ** 20).toFixed(1) })) },
  })
  const filter = { inputSuffix: '80218021802180218021802180218021', toAddresses: new Set<string>() }
  for (let pass = 0; pass < Number(process.argv[3] ?? 2); pass++) {
    let next = 1
    const worker = async () => {
      while (next <= 1000) {
        const from = next
        next += 50
        await rpc.blocks(from, Math.min(1000, from + 49), filter)
      }
    }
    const passStart = performance.now()
    await Promise.all([worker(), worker(), worker(), worker()])
    console.log(t(), `pass ${pass}: ${(200_000 / ((performance.now() - passStart) / 1000)).toFixed(0)} tx/s`)
  }
} finally {
  await replay.stop()
}
