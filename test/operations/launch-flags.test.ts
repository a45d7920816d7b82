import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { root } from '../../bin/dist-state.mjs'
import { DAEMON_NODE_FLAGS } from '../../bin/node-flags.mjs'

/**
 * The daemon's V8 flags (bin/node-flags.mjs) cannot be set from inside the
 * process: every way it is started spells them out, and each must say the
 * same, or an operator's daemon runs slower than the one benchmarked.
 */
describe("the daemon's V8 flags", () => {
  const read = (path: string) => readFileSync(`${root}/${path}`, 'utf8')

  it('are on the attribution command, npm start and the image', () => {
    const shebang = read('bin/attribution.mjs').split('\n')[0]!
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start!
    const entrypoint = read('Dockerfile').split('\n').find((line) => line.startsWith('ENTRYPOINT'))!
    expect(shebang).toBe(`#!/usr/bin/env -S node ${DAEMON_NODE_FLAGS.join(' ')}`)
    expect(start).toBe(`node ${DAEMON_NODE_FLAGS.join(' ')} bin/attribution.mjs start`)
    expect(entrypoint).toBe(`ENTRYPOINT ${JSON.stringify(['node', ...DAEMON_NODE_FLAGS, 'bin/attribution.mjs'])}`.replaceAll(',', ', '))
  })

  it('start the command run as a program (the shebang passes them to node)', () => {
    const usage = execFileSync(`${root}/bin/attribution.mjs`, ['--help'], { encoding: 'utf8' })
    expect(usage).toContain('Usage: attribution <command>')
  })
})
