import { describe, expect, it } from 'vitest'
import { requestLogLevel, SLOW_REQUEST_MS } from './request-log.js'

describe('requestLogLevel', () => {
  it.each([
    [200, 5, 'debug'],
    [304, 5, 'debug'],
    [404, 5, 'debug'],
    [429, 5, 'debug'],
    [500, 5, 'info'],
    [503, 5, 'info'],
    [200, SLOW_REQUEST_MS - 1, 'debug'],
    [200, SLOW_REQUEST_MS, 'info'],
    [400, SLOW_REQUEST_MS * 3, 'info'],
  ] as const)('status %i after %i ms: %s', (status, elapsed, level) => {
    expect(requestLogLevel(status, elapsed)).toBe(level)
  })
})
