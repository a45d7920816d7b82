// Worker-thread bootstrap: registers tsx (as bin/attribution.mjs does) so the TypeScript share runs as is.
import { register } from 'tsx/esm/api'

register()
await import('./calldata-worker.ts')
