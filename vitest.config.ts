import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'bench/**/*.test.ts'],
    exclude: ['test/faults/**', 'node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // two cores: a few files at a time, each with its own database and Redis prefix
    maxWorkers: 3,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
})
