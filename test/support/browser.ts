import { execFileSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'

/** The names Chromium and Chrome are installed under by Debian/Ubuntu, Fedora, snap and Google's packages. */
const BROWSER_NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']

export class BrowserNotFoundError extends Error {
  override name = 'BrowserNotFoundError'
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The first of the usual browser names found on PATH. */
export function findBrowserOnPath(path = process.env.PATH ?? ''): string | undefined {
  for (const name of BROWSER_NAMES) {
    for (const folder of path.split(delimiter).filter(Boolean)) {
      const candidate = join(folder, name)
      if (isExecutable(candidate)) return candidate
    }
  }
  return undefined
}

const HOW = 'install Chromium (apt-get install chromium, dnf install chromium, brew install --cask chromium) or set CHROME_PATH to a Chrome/Chromium binary'

/**
 * Installs Debian's chromium when this process may: root, apt-get present,
 * and TEST_BROWSER_INSTALL not set to 0. Waits for a dpkg lock held by a
 * parallel test file instead of failing on it.
 */
function installWithApt(): boolean {
  const root = process.getuid?.() === 0
  if (!root || process.env.TEST_BROWSER_INSTALL === '0' || !findOnPath('apt-get')) return false
  const lockWait = ['-o', 'DPkg::Lock::Timeout=600']
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  execFileSync('apt-get', [...lockWait, 'update', '-qq'], { stdio: 'ignore', env, timeout: 600_000 })
  execFileSync('apt-get', [...lockWait, 'install', '-y', '-qq', 'chromium'], { stdio: 'ignore', env, timeout: 900_000 })
  return true
}

function findOnPath(name: string): string | undefined {
  return (process.env.PATH ?? '').split(delimiter).map((folder) => join(folder, name)).find(isExecutable)
}

/**
 * The browser the dashboard tests drive: CHROME_PATH when set, else the usual
 * names on PATH, else Debian's chromium installed through apt-get (as root,
 * unless TEST_BROWSER_INSTALL=0). Throws one line saying what to do otherwise.
 */
export function locateChromium(): string {
  const configured = process.env.CHROME_PATH
  if (configured) {
    if (isExecutable(configured)) return configured
    throw new BrowserNotFoundError(`CHROME_PATH=${configured} is not an executable file: ${HOW}`)
  }
  const found = findBrowserOnPath()
  if (found) return found
  try {
    if (installWithApt()) {
      const installed = findBrowserOnPath()
      if (installed) return installed
    }
  } catch (error) {
    throw new BrowserNotFoundError(`no Chromium found and apt-get install chromium failed (${(error as Error).message.split('\n')[0]}): ${HOW}`)
  }
  throw new BrowserNotFoundError(`no Chromium found (CHROME_PATH unset; none of ${BROWSER_NAMES.join(', ')} on PATH): ${HOW}`)
}
