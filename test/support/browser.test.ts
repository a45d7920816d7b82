import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { findBrowserOnPath, locateChromium } from './browser.js'

describe('the tests’ browser locator', () => {
  const folder = mkdtempSync(join(tmpdir(), 'browser-'))
  const fake = join(folder, 'chromium-browser')
  writeFileSync(fake, '#!/bin/sh\n')
  chmodSync(fake, 0o755)
  afterAll(() => rmSync(folder, { recursive: true, force: true }))
  afterEach(() => vi.unstubAllEnvs())

  it('takes CHROME_PATH first', () => {
    vi.stubEnv('CHROME_PATH', fake)
    expect(locateChromium()).toBe(fake)
  })

  it('refuses a CHROME_PATH that is not executable, in one line saying how', () => {
    vi.stubEnv('CHROME_PATH', join(folder, 'missing'))
    expect(() => locateChromium()).toThrow(
      `CHROME_PATH=${join(folder, 'missing')} is not an executable file: install Chromium (apt-get install chromium, dnf install chromium, brew install --cask chromium) or set CHROME_PATH to a Chrome/Chromium binary`,
    )
  })

  it('finds the usual names on PATH', () => {
    expect(findBrowserOnPath(`/nonexistent:${folder}`)).toBe(fake)
    expect(findBrowserOnPath('/nonexistent')).toBe(undefined)
  })

  it('without a browser and without permission to install, fails with one line saying how', () => {
    vi.stubEnv('CHROME_PATH', '')
    vi.stubEnv('PATH', '/nonexistent')
    vi.stubEnv('TEST_BROWSER_INSTALL', '0')
    expect(() => locateChromium()).toThrow(
      'no Chromium found (CHROME_PATH unset; none of chromium, chromium-browser, google-chrome, google-chrome-stable on PATH): install Chromium (apt-get install chromium, dnf install chromium, brew install --cask chromium) or set CHROME_PATH to a Chrome/Chromium binary',
    )
  })
})
