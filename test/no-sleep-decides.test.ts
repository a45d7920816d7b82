import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * CONTRIBUTING's rule, checked where a text search can: no sleep decides a
 * test. A sleep followed by an assertion bets that the system got somewhere
 * within the pause; on a loaded machine it did not (nine CI fixes in a row
 * were such bets). A wait goes through `until()` for a positive signal, or
 * the code under test takes a clock.
 *
 * What this finds: an awaited pause (`sleep(…)`, `delay(…)`, timers/promises'
 * `setTimeout` under any name, a helper defined as a pause, or an inline
 * `new Promise(… setTimeout …)`) followed, within the next few statements of
 * its block, by an assertion or by returning a judgment (`return !settled`).
 * A pause that is a poll loop's body (`while (…) await sleep(…)`, or the last
 * statement of a loop whose condition is the signal) is not a finding. A
 * pause that is meant (a random moment to kill a process, an outage's
 * length) carries `// sleep-ok: <why>` on its line or the line above.
 */

const root = fileURLToPath(new URL('..', import.meta.url))

/** How far after a pause an assertion still counts as following from it. */
const STATEMENTS_AFTER = 4

/** Files another change is fixing; each entry names who removes it. Empty once those changes are merged. */
/** Files with a finding that waits on a fix elsewhere (none now). */
const PENDING = new Set<string>([])

export type Finding = { line: number; text: string; followedBy: string }

const ASSERTION = /\bexpect\s*[(.]|\bassert\b|\.should\b|\breturn\b[^;]*(?:!(?!=)|===|!==|[<>]=?|\btrue\b|\bfalse\b)/

function pauseNames(source: string): string[] {
  const names = ['sleep', 'delay']
  for (const match of source.matchAll(/import\s*\{([^}]*)\}\s*from\s*['"]node:timers\/promises['"]/g)) {
    for (const part of match[1]!.split(',')) {
      const [imported, local] = part.trim().split(/\s+as\s+/)
      if (imported === 'setTimeout') names.push(local ?? imported)
    }
  }
  for (const match of source.matchAll(/(?:const|function)\s+(\w+)\s*=?\s*(?:async\s*)?\([^)]*\)\s*(?::[^=]*)?=?>?\s*\{?\s*(?:return\s+)?new Promise[^\n]*setTimeout/g)) names.push(match[1]!)
  return [...new Set(names)]
}

/** The lines of `source` where an awaited pause is followed by an assertion (1-based), with the assertion. */
export function sleepsDecidingTests(source: string): Finding[] {
  const names = pauseNames(source)
  const awaitedPause = new RegExp(`\\bawait\\s+(?:(?:${names.join('|')})\\s*\\(|new Promise\\b[^\\n]*\\bsetTimeout\\b)`)
  const lines = source.split('\n')
  const findings: Finding[] = []
  lines.forEach((text, index) => {
    if (!awaitedPause.test(text)) return
    if (/sleep-ok:/.test(text) || /sleep-ok:/.test(lines[index - 1] ?? '')) return
    // the body of a poll loop on one line: its condition is the signal
    if (/^\s*(?:while|for)\s*\(.*\)\s*await\b/.test(text)) return
    let depth = 0
    let statements = 0
    for (let next = index + 1; next < lines.length && statements < STATEMENTS_AFTER; next++) {
      const line = lines[next]!.trim()
      if (line === '' || line.startsWith('//') || line.startsWith('*')) continue
      for (const character of line.replace(/(['"`])(?:\\.|(?!\1).)*\1/g, '')) {
        if (character === '{') depth++
        else if (character === '}') depth--
      }
      // the pause's block closed (a loop's last statement, a helper's end): what follows is not its outcome
      if (depth < 0) break
      statements++
      if (ASSERTION.test(line)) {
        findings.push({ line: index + 1, text: text.trim(), followedBy: line })
        break
      }
    }
  })
  return findings
}

/** Test files and the test kit: every `*.test.ts` in src/, test/, bench/ and devnet/, and test/**\/*.ts. */
function testSources(): string[] {
  const found: string[] = []
  const walk = (folder: string) => {
    for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
      const path = join(folder, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.test.ts') || (path.startsWith('test/') && entry.name.endsWith('.ts'))) found.push(path)
    }
  }
  for (const folder of ['src', 'test', 'bench', 'devnet']) walk(folder)
  return found
}

describe('no sleep decides a test', () => {
  it('finds none in the repository’s tests (allow a meant pause with `// sleep-ok: <why>`)', () => {
    const sources = testSources()
    expect(sources.length).toBeGreaterThan(50)
    const findings = sources
      .filter((path) => !PENDING.has(path) && relative(root, join(root, path)) !== 'test/no-sleep-decides.test.ts')
      .flatMap((path) => sleepsDecidingTests(readFileSync(join(root, path), 'utf8')).map((finding) => `${path}:${finding.line}: ${finding.text}  →  ${finding.followedBy}`))
    expect(findings).toEqual([])
  })

  it('each file waiting on a fix elsewhere still has a finding (else take it off PENDING)', () => {
    for (const path of PENDING) {
      let source: string
      try {
        source = readFileSync(join(root, path), 'utf8')
      } catch {
        continue // moved by the reorganisation: its new place is checked with the rest
      }
      expect(sleepsDecidingTests(source), path).not.toEqual([])
    }
  })

  describe('the search', () => {
    const flagged = (source: string) => sleepsDecidingTests(source).map((finding) => finding.line)

    it('flags a pause then an assertion, whatever the pause is called', () => {
      expect(flagged(`await sleep(200)\nexpect(liveReads).toBe(0)`)).toEqual([1])
      expect(flagged(`import { setTimeout as wait } from 'node:timers/promises'\nawait wait(200)\nconst ready = read()\nexpect(ready).toHaveLength(1)`)).toEqual([2])
      expect(flagged(`const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))\nawait pause(50)\nexpect(x).toBe(1)`)).toEqual([2])
      expect(flagged(`await new Promise((resolve) => setTimeout(resolve, 100))\nassert.equal(a, 1)`)).toEqual([1])
    })

    it('flags a helper that pauses and returns a judgment (the old split-rollback `stillWaiting`)', () => {
      expect(flagged(`async function stillWaiting(p) {\n  let settled = false\n  await sleep(300)\n  return !settled\n}`)).toEqual([3])
    })

    it('leaves poll loops, pauses followed by actions, and allowed pauses alone', () => {
      expect(flagged(`while (!done()) {\n  await sleep(50)\n}\nexpect(done()).toBe(true)`)).toEqual([])
      expect(flagged(`while (keepGoing()) await sleep(100)\nexpect(statuses).toEqual({})`)).toEqual([])
      expect(flagged(`await sleep(2_000)\nawait redis.start()\nawait waitForIndexed()`)).toEqual([])
      expect(flagged(`await sleep(random(30)) // sleep-ok: jitter\nexpect(x).toBe(1)`)).toEqual([])
      expect(flagged(`// sleep-ok: the outage lasts this long\nawait sleep(5_000)\nexpect(x).toBe(1)`)).toEqual([])
      expect(flagged(`await sleep(10)\nreturn { killAtBlock: block }`)).toEqual([])
      expect(flagged(`setTimeout(() => socket.end(), 20)\nexpect(x).toBe(1)`)).toEqual([])
    })
  })
})
