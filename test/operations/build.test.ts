import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { builtStamp, distState, root } from '../../bin/dist-state.mjs'

/**
 * npm runs `prepare` (bin/build.mjs --prepare) on more than npm ci: the first
 * `npx attribution` on a machine installs the clone into npx's cache and runs
 * it too. A rebuild there replaced dist/ under a daemon starting from it (a CI
 * run: ERR_MODULE_NOT_FOUND). On a fresh dist/ it must leave it as it is.
 */
describe('npm prepare', () => {
  it.runIf(distState() === 'fresh')('leaves a fresh dist/ as it is', () => {
    const before = readFileSync(builtStamp, 'utf8')
    execFileSync(process.execPath, ['bin/build.mjs', '--prepare'], { cwd: root, stdio: 'pipe' })
    expect(readFileSync(builtStamp, 'utf8')).toBe(before)
  })
})
