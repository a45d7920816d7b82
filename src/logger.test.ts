import { Writable } from 'node:stream'
import { describe, expect, it, vi } from 'vitest'
import { configuredUrls, createLogger, credentialsOf } from './logger.js'

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

describe('credentials of configured URLs', () => {
  const key = 'oKxs8xQ3vT7pLm2Rz9Wq4Yb6'
  const urls = [`https://base-mainnet.example.com/v2/${key}`, 'wss://ws.example.com/?apikey=s3cr3tQuery', 'postgres://postgres:hunter2pw@db.internal:5432/attribution']

  function loggedLines(secretUrls: string[], log: (logger: ReturnType<typeof createLogger>) => void): string {
    const lines: string[] = []
    const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) })
    log(createLogger({ level: 'trace', destination: sink, secretUrls }))
    return lines.join('')
  }

  it('blanks them in messages, causes, stacks and nested fields, at every level', () => {
    const cause = new Error(`HTTP request failed.\nURL: ${urls[0]}`)
    const error = new Error(`RPC of chain 8453 failed: ${cause.message}`, { cause })
    const output = loggedLines(urls, (logger) => {
      logger.trace({ err: error }, 'validation failed')
      logger.debug({ request: { target: urls[1], nested: [{ db: urls[2] }] } }, `tried ${urls[0]}`)
      logger.fatal(`database ${urls[2]} unreachable; key ${key} refused`)
    })
    for (const secret of [key, 's3cr3tQuery', 'hunter2pw']) expect(output).not.toContain(secret)
    expect(output).toContain('https://base-mainnet.example.com/v2/***')
    expect(output).toContain('postgres://***@db.internal:5432/attribution')
    expect(output).toContain('"level":10')
  })

  it('blanks the userinfo of any URL, configured or not, and leaves names alone', () => {
    const output = loggedLines([], (logger) => logger.info({ target: 'redis://default:pw@cache:6379', route: '/v2/base-mainnet' }, 'postgres and redis ready'))
    expect(output).toContain('redis://***@cache:6379')
    expect(output).toContain('/v2/base-mainnet')
    expect(output).toContain('postgres and redis ready')
  })

  it('finds the URLs of a parsed configuration wherever they sit', () => {
    const config = { DATABASE_URL: urls[2], chains: [{ rpcUrl: urls[0], wsUrl: urls[1] }], VALIDATE_RPC_URL: { byChain: new Map([[10, `https://opt.example.com/${key}x`]]) } }
    expect(configuredUrls(config).sort()).toEqual([...urls, `https://opt.example.com/${key}x`].sort())
    expect(credentialsOf(urls[0]!)).toEqual([key])
    expect(credentialsOf(urls[2]!)).toEqual(['hunter2pw'])
  })
})
