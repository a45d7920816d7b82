import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

/** Tests of the bench tooling itself (chain generator, replay server, floor): `npx vitest run --config bench/vitest.config.ts`. */
export default defineConfig({
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    include: ['bench/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
})
