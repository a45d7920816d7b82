import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../../', import.meta.url))
const SECRET_URL = 'postgres://indexer:hunter2@db.internal:5432/attribution'

/** A process set up as the daemon sets itself up (src/bin/cli.ts), then failing as `failure` says. */
function failingProcess(failure: string) {
  const script = `
    const { createLogger } = await import('./src/logger.ts')
    const { exitOnUnhandled } = await import('./src/bin/last-resort.ts')
    const logger = createLogger({ level: 'info', name: 'attribution:test', secretUrls: [${JSON.stringify(SECRET_URL)}] })
    exitOnUnhandled(logger, (code, line) => { line(); process.exit(code) })
    ${failure}
    setTimeout(() => logger.info('still running'), 200)`
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 30_000 })
}

describe('the daemon on a bug that escapes every handler', () => {
  it.each([
    ['a rejected promise nobody handles', `Promise.reject(new Error('could not connect to ${SECRET_URL}'))`],
    ['an exception nothing catches', `setImmediate(() => { throw new Error('could not connect to ${SECRET_URL}') })`],
  ])('%s: exit 1 after one fatal log line, the secret in its message redacted', (_, failure) => {
    const run = failingProcess(failure)
    expect(run.status).toBe(1)
    const lines = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { level: number; msg: string; err?: { message: string } })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: 60, msg: expect.stringMatching(/\(a bug\): exiting$/) })
    expect(lines[0]!.err!.message).toContain('could not connect to')
    expect(run.stdout + run.stderr).not.toContain('hunter2')
  })
})
