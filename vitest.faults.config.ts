import { defineConfig } from 'vitest/config'

/**
 * The fault and abuse suite (issue #6): `npm run test:faults`. Each file
 * starts its own PostgreSQL cluster, Redis server and anvil, breaks them on
 * purpose and compares with ground truth. Files run one at a time: the
 * trials kill processes and stop servers, and the machine has two cores.
 * FAULTS_SCALE=reduced is the pass CI runs.
 */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    globalSetup: ['test/faults/support/global-setup.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 45 * 60_000,
    hookTimeout: 10 * 60_000,
    teardownTimeout: 60_000,
  },
})
