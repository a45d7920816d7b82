import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ConfigError, developmentCursorSecret } from './env.js'

// the development cursor secret (issue 43.5): made once, kept, the same on every later run
describe('developmentCursorSecret', () => {
  const dirs: string[] = []
  const fileIn = () => {
    const dir = mkdtempSync(join(tmpdir(), 'cursor-secret-'))
    dirs.push(dir)
    return join(dir, '.cursor-secret')
  }
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  it('generates a secret once, readable by its owner only, and returns the same one afterwards', () => {
    const file = fileIn()
    const first = developmentCursorSecret(file)
    expect(first.created).toBe(true)
    expect(first.secret).toMatch(/^[0-9a-f]{48}$/)
    expect(readFileSync(file, 'utf8').trim()).toBe(first.secret)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(developmentCursorSecret(file)).toEqual({ secret: first.secret, created: false })
  })

  it('keeps a secret someone wrote there, and refuses a file too short to be one', () => {
    const file = fileIn()
    writeFileSync(file, 'my-own-development-secret\n')
    expect(developmentCursorSecret(file)).toEqual({ secret: 'my-own-development-secret', created: false })
    writeFileSync(file, 'short\n')
    expect(() => developmentCursorSecret(file)).toThrow(ConfigError)
  })
})
