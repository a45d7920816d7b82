import { describe, expect, it } from 'vitest'
import { isDatabaseError } from './follower.js'
import { LockLostError } from './lock.js'

describe('isDatabaseError', () => {
  it('is true for Postgres errors, a lost lock and a lost connection', () => {
    expect(isDatabaseError(Object.assign(new Error('relation does not exist'), { name: 'PostgresError' }))).toBe(true)
    expect(isDatabaseError(new LockLostError('lost'))).toBe(true)
    expect(isDatabaseError(Object.assign(new Error('timeout'), { code: 'CONNECT_TIMEOUT' }))).toBe(true)
    expect(isDatabaseError(Object.assign(new Error('closed'), { code: 'CONNECTION_CLOSED' }))).toBe(true)
  })

  it('is false for anything else: the step is retried with the lock kept', () => {
    expect(isDatabaseError(new Error('fetch failed'))).toBe(false)
    expect(isDatabaseError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe(false)
    expect(isDatabaseError(Object.assign(new Error('rpc'), { code: -32000 }))).toBe(false)
    expect(isDatabaseError(undefined)).toBe(false)
  })
})
