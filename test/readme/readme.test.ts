import { execFile } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../../devnet/free-port.js'
import { DEMO_FILE } from '../../devnet/notifications-demo.js'
import { until } from '../support/poll.js'
import { createTestDatabase, createTestRedis, type TestDatabase, type TestRedis } from '../support/services.js'
import { newcomerEnvironment, npmStart, repositoryRoot, type NpmStart } from './daemon.js'
import { examplesOf, mismatches, type Example, type Step } from './examples.js'

/**
 * The README's examples, run as written against what `npm start` starts
 * with nothing configured (the devnet), and compared with the answers they
 * show: shapes, and named values such as which wallet a builder code
 * belongs to. The docs/ pages' shell examples run the same way.
 *
 * What the test does that a reader does by hand, and nothing more:
 * - `npm ci` is not run (this clone is installed) nor `npm test` (it runs
 *   this file); `npm start` is run by the test, in the clone, with the
 *   environment the example exported before it (a block that starts the
 *   daemon again with tokens gets a daemon with those tokens);
 * - the API's port is a free one instead of 3000 (others use this machine),
 *   and the devnet's one instead of 8545, both given to the shell too;
 * - a stream (`curl -sN`) is read for 3 s: it never ends by itself;
 * - `NAME=$(command | jq -r …)` prints the command's answer too, so the
 *   answer the example shows can be compared;
 * - an example that takes a hash from a code's newest attribution runs once
 *   the devnet has sent that code one (the README says it takes a minute);
 * - an inbox read is asked again until it holds a notification (for up to
 *   30 s): a send is delivered by a worker a moment later, which a reader
 *   running the commands by hand never outpaces, and a loaded machine can;
 * - the clone's .devnet/notifications-demo.json, which `npm start` writes,
 *   is put back as it was.
 */

const run = promisify(execFile)
const documents = async () => ['README.md', ...(await readdir(join(repositoryRoot, 'docs'))).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`)]

const STARTS_DAEMON = /^\s*npm start\b/
const NOT_RUN_HERE = /^\s*npm (ci|test)\b/
const STREAM_SECONDS = 3
/** curl's status when --max-time ends a transfer: a stream's normal end here. */
const CURL_TIMED_OUT = 28

let database: TestDatabase
let redis: TestRedis
let scratch: string
let settings: Record<string, string>
let daemon: NpmStart | undefined
/** Each step's output stays on disk when something failed, for a look at what ran. */
let keepScratch = false
/** `npm start` here writes the clone's .devnet/notifications-demo.json: whatever a developer's own run left there is put back. */
const demoFile = join(repositoryRoot, DEMO_FILE)
let developersDemoFile: string | undefined

beforeAll(async () => {
  ;[database, redis] = await Promise.all([createTestDatabase('readme'), createTestRedis()])
  scratch = await mkdtemp(join(tmpdir(), 'readme-'))
  developersDemoFile = await readFile(demoFile, 'utf8').catch(() => undefined)
  const [port, devnetPort] = [await freePort(), await freePort()]
  settings = { DATABASE_URL: database.url, REDIS_URL: redis.url, QUEUE_PREFIX: redis.prefix, PORT: String(port), DEVNET_PORT: String(devnetPort) }
})

afterAll(async () => {
  await daemon?.stop()
  if (developersDemoFile === undefined) await rm(demoFile, { force: true })
  else await writeFile(demoFile, developersDemoFile, { mode: 0o600 })
  if (!keepScratch) await rm(scratch, { recursive: true, force: true })
  await redis?.cleanup()
  await database?.drop()
})

/** `NAME=$(command | jq -r …)`: the answer an example shows is the command's, which the assignment hides. */
const CAPTURED = /^(\w+)=\$\(([\s\S]+?)\|\s*(jq -r [^\n]+)\)(\s*#.*)?$/

/** An inbox read: delivered notifications only, which the delivery worker writes a moment after the send. */
const READS_INBOX = /^curl -s "\$API\/v1\/platform\/inbox\?/

/** The read again, every 0.1 s for up to 30 s, until its answer holds a notification; then that answer, or the last one. */
function untilDelivered(command: string): string {
  return `for __try in $(seq 300); do __answer=$(${command}); case "$__answer" in *'"notifications":[]'*) sleep 0.1;; *) break;; esac; done\nprintf '%s' "$__answer"`
}

/** The command as the test runs it: the test's ports, streams read for a while, captured answers printed too. */
function adapted(command: string, api: string): string {
  const local = command.replaceAll('http://127.0.0.1:3000', api).replace(/curl -sN /g, `curl -sN --max-time ${STREAM_SECONDS} `)
  if (READS_INBOX.test(local.trim())) return untilDelivered(local.trim())
  const captured = CAPTURED.exec(local)
  if (!captured) return local
  const [, name, producer, filter] = captured
  return `__answer=$(${producer!.trim()})\nprintf '%s' "$__answer"\n${name}=$(printf '%s' "$__answer" | ${filter})`
}

type Outcome = { step: Step; status: number; printed: string }

/** Runs the steps in one bash (variables carry from step to step), each step's output and status kept apart. */
async function runSteps(steps: Step[], env: NodeJS.ProcessEnv, api: string, name: string): Promise<{ outcomes: Outcome[]; env: NodeJS.ProcessEnv }> {
  const directory = join(scratch, name)
  await rm(directory, { recursive: true, force: true })
  await run('mkdir', ['-p', directory])
  const script = steps
    .map((step, index) => `{\n${adapted(step.command, api)}\n} > '${directory}/${index}.out' 2>&1 < /dev/null\necho $? > '${directory}/${index}.status'`)
    .concat(`env -0 > '${directory}/env'`)
    .join('\n')
  await writeFile(join(directory, 'script.sh'), script)
  await run('bash', [join(directory, 'script.sh')], { cwd: repositoryRoot, env, timeout: 180_000 })
  const outcomes = await Promise.all(
    steps.map(async (step, index) => ({
      step,
      printed: await readFile(join(directory, `${index}.out`), 'utf8'),
      status: Number(await readFile(join(directory, `${index}.status`), 'utf8')),
    })),
  )
  const exported = Object.fromEntries((await readFile(join(directory, 'env'), 'utf8')).split('\0').filter(Boolean).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]))
  return { outcomes, env: exported }
}

/** Before an example takes a hash from `$(curl … /attributions?…)`, the devnet has sent that code one. */
async function awaitNewestAttributions(example: Example, api: string) {
  for (const [, path] of example.text.matchAll(/\$\(curl -s "\$API(\/v1\/analytics\/codes\/[^"]+\/attributions\?[^"]*)"/g)) {
    await until(
      `an attribution at ${path}`,
      async () => (((await (await fetch(`${api}${path}`)).json()) as { attributions?: unknown[] }).attributions?.length ?? 0) > 0,
      { timeoutMs: 150_000, intervalMs: 1_000 },
    )
  }
}

function failuresOf(example: Example, outcomes: Outcome[]): string[] {
  return outcomes.flatMap(({ step, status, printed }) => {
    const streamed = /curl -sN /.test(step.command) && status === CURL_TIMED_OUT
    const problems = [...(status === 0 || streamed ? [] : [`exited ${status}`]), ...mismatches(step.expected, printed)]
    if (problems.length === 0) return []
    return [`${example.file}:${step.line} \`${step.command.split('\n')[0]}\`: ${problems.join('; ')}\n    printed: ${printed.slice(0, 600)}`]
  })
}

/** Runs one example: the steps before its `npm start` give the daemon's environment, the rest run against it. */
async function runExample(example: Example, index: number): Promise<string[]> {
  const steps = example.steps
    .map((step) => ({ ...step, command: step.command.split('\n').filter((line) => !NOT_RUN_HERE.test(line)).join('\n') }))
    .filter((step) => step.command.trim() !== '')
  const startAt = steps.findIndex((step) => STARTS_DAEMON.test(step.command))
  let env = newcomerEnvironment(settings)
  let rest = steps
  if (startAt >= 0) {
    const before = steps.slice(0, startAt)
    if (before.length > 0) env = (await runSteps(before, env, 'http://127.0.0.1:0', `${index}-before`)).env
    await daemon?.stop()
    daemon = await npmStart(env)
    rest = steps.slice(startAt + 1)
  }
  if (!daemon) throw new Error(`${example.file}:${example.line}: an example before any \`npm start\``)
  await awaitNewestAttributions(example, daemon.api)
  const { outcomes } = await runSteps(rest, env, daemon.api, String(index))
  return failuresOf(example, outcomes)
}

describe('README examples', () => {
  it('the two commands: `npm start` runs the daemon, `npm test` runs every test (this one included)', async () => {
    const readme = await readFile(join(repositoryRoot, 'README.md'), 'utf8')
    const quickStart = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1))
    expect(quickStart).toMatch(/^npm start\b/m)
    expect(quickStart).toMatch(/^npm test\b/m)
    const scripts = (JSON.parse(await readFile(join(repositoryRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
    expect(scripts.start).toMatch(/\bstart$/)
    expect(scripts.test).toMatch(/\bvitest run\b/)
    expect(await readFile(join(repositoryRoot, 'vitest.config.ts'), 'utf8')).toContain("'test/**/*.test.ts'")
  })

  it('README.md stays a newcomer’s page (≤ 350 lines); every docs/ page is linked from it; every relative link resolves', async () => {
    const readme = await readFile(join(repositoryRoot, 'README.md'), 'utf8')
    expect(readme.split('\n').length).toBeLessThanOrEqual(350)
    const pages = (await documents()).filter((file) => file.startsWith('docs/'))
    expect(pages.filter((page) => !readme.includes(`](${page}`))).toEqual([])
    const broken: string[] = []
    for (const file of await documents()) {
      const text = await readFile(join(repositoryRoot, file), 'utf8')
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue
        await stat(join(repositoryRoot, dirname(file), target!)).catch(() => broken.push(`${file}: ${target}`))
      }
    }
    expect(broken).toEqual([])
  })

  it(
    'every shell example answers as shown, against a plain `npm start` (the devnet)',
    async () => {
      const examples = (await Promise.all((await documents()).map(async (file) => examplesOf(await readFile(join(repositoryRoot, file), 'utf8'), file)))).flat()
      expect(examples.length).toBeGreaterThan(3)
      const failures: string[] = []
      for (const [index, example] of examples.entries()) failures.push(...(await runExample(example, index)))
      keepScratch = failures.length > 0
      expect(failures, `${failures.join('\n')}\n(each step's script and output: ${scratch})`).toEqual([])
    },
    600_000,
  )
})
