import { Writable } from 'node:stream'
import { describe, expect, it, vi } from 'vitest'
import { createLogger } from './logger.js'

describe('repeated warnings', () => {
  it('logs one line per component and message per window, then says how many it left out', () => {
    vi.useFakeTimers({ now: 0 })
    try {
      const lines: Record<string, unknown>[] = []
      const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(JSON.parse(String(chunk))), done()) })
      const captured = createLogger({ level: 'info', repeatWindowMs: 10_000, destination: sink })
      const worker = captured.child({ component: 'worker' })
      const follower = captured.child({ component: 'follower' })
      for (let i = 0; i < 50; i++) worker.warn({ err: 'ECONNREFUSED' }, 'range failed; will retry')
      follower.warn('could not read the head; retrying')
      worker.info('informational lines are never held back')
      worker.info('informational lines are never held back')
      vi.setSystemTime(10_000)
      worker.warn({ err: 'ECONNREFUSED' }, 'range failed; will retry')
      expect(lines.map(({ component, msg, repeated_since_last_line }) => ({ component, msg, repeated_since_last_line }))).toEqual([
        { component: 'worker', msg: 'range failed; will retry', repeated_since_last_line: undefined },
        { component: 'follower', msg: 'could not read the head; retrying', repeated_since_last_line: undefined },
        { component: 'worker', msg: 'informational lines are never held back', repeated_since_last_line: undefined },
        { component: 'worker', msg: 'informational lines are never held back', repeated_since_last_line: undefined },
        { component: 'worker', msg: 'range failed; will retry', repeated_since_last_line: 49 },
      ])
    } finally {
      vi.useRealTimers()
    }
  })

  it('drops the stack of errors that carry a code (expected conditions), keeps it otherwise', () => {
    const lines: { err: { stack?: string; code?: string } }[] = []
    const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(JSON.parse(String(chunk))), done()) })
    const logger = createLogger({ level: 'info', destination: sink })
    logger.error({ err: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }) }, 'redis down')
    logger.error({ err: new Error('a bug') }, 'unexpected')
    expect(lines[0]!.err).toEqual({ type: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:6379', code: 'ECONNREFUSED' })
    expect(lines[1]!.err.stack).toMatch(/^Error: a bug\n\s+at /)
  })
})
