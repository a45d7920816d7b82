import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { postgresPatchProblem } from './driver-patch.js'

const installed = fileURLToPath(new URL('../../node_modules/postgres/src/', import.meta.url))

describe('postgres.js patch check', () => {
  const copy = mkdtempSync(join(tmpdir(), 'pg-driver-'))
  afterAll(() => rmSync(copy, { recursive: true, force: true }))

  it('accepts the installed, patched driver', () => {
    expect(postgresPatchProblem()).toBe(undefined)
  })

  it('names the unpatched file and the command that fixes it', () => {
    cpSync(installed, copy, { recursive: true })
    const file = join(copy, 'connection.js')
    writeFileSync(file, readFileSync(file, 'utf8').replace('the connection closed before this buffered write ran', 'original'))
    expect(postgresPatchProblem(`${copy}/`)).toBe(
      `postgres.js is not patched (${copy}/connection.js; patches/postgres+3.4.9.patch): run npx patch-package (npm ci --ignore-scripts skips it)`,
    )
  })
})
