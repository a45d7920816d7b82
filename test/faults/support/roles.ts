import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnRole, type RoleProcess } from '../../support/processes.js'
import { until as poll } from '../../support/poll.js'

export const logsDir = fileURLToPath(new URL('../../../test-output/faults/logs/', import.meta.url))

export type LoggedRole = RoleProcess & {
  name: string
  /** Everything the process printed so far (its pino log), in full. */
  log(): string
  /** True once a line of its log contains `text`. */
  logged(text: string): boolean
}

/**
 * `spawnRole` plus its whole output: kept in memory for the assertions
 * (secrets never logged, which follower took the lock) and written to
 * test-output/faults/logs/<name>.log for whoever reads a failure.
 */
export function startRole(role: Parameters<typeof spawnRole>[0], env: Record<string, string>, name: string): LoggedRole {
  const process_ = spawnRole(role, env)
  const chunks: string[] = []
  mkdirSync(logsDir, { recursive: true })
  const file: WriteStream = createWriteStream(join(logsDir, `${name}.log`))
  file.on('error', () => {})
  const keep = (chunk: Buffer) => {
    const text = chunk.toString('utf8')
    chunks.push(text)
    file.write(text)
  }
  process_.child.stdout!.on('data', keep)
  process_.child.stderr!.on('data', keep)
  process_.exited.then(() => file.end())
  const log = () => chunks.join('')
  return { ...process_, name, log, logged: (text) => log().includes(text) }
}

/** The test kit's one polling helper, with the fault suite's longer default wait. */
export const until = (what: string, check: () => Promise<boolean> | boolean, timeoutMs = 120_000) => poll(what, check, { timeoutMs })

/** Each secret that appears anywhere in the texts (none expected). */
export function leakedSecrets(texts: readonly string[], secrets: readonly string[]): string[] {
  return secrets.filter((secret) => secret.length > 0 && texts.some((text) => text.includes(secret)))
}
