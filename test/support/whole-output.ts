import type { RoleProcess } from './processes.js'

/**
 * Everything a role process prints, stdout and stderr, from its first byte:
 * `RoleProcess.output()` keeps only the last lines, and a check that
 * something was never printed needs all of them. Call it right after
 * spawning, before the process can print; `complete` resolves once both
 * streams have closed (a process's exit can come before its last bytes).
 */
export function wholeOutput(role: RoleProcess): { text: () => string; complete: Promise<void> } {
  const chunks: Buffer[] = []
  const closed = [role.child.stdout!, role.child.stderr!].map((stream) => {
    stream.on('data', (chunk: Buffer) => chunks.push(chunk))
    return new Promise<void>((resolve) => stream.once('close', resolve))
  })
  return { text: () => Buffer.concat(chunks).toString('utf8'), complete: Promise.all(closed).then(() => undefined) }
}
