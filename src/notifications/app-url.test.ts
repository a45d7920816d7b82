import { describe, expect, it } from 'vitest'
import { InvalidAppUrlError, normalizeAppUrl } from './app-url.js'

describe('normalizeAppUrl', () => {
  it.each([
    ['https://example.com', 'https://example.com'],
    ['https://example.com/', 'https://example.com'],
    ['HTTPS://Example.COM/App/', 'https://example.com/App'],
    ['https://example.com/app///', 'https://example.com/app'],
    ['https://example.com/app?ref=x#top', 'https://example.com/app'],
    ['https://user:pass@example.com/app', 'https://example.com/app'],
    ['https://example.com:443/app', 'https://example.com/app'],
    ['https://example.com:8443/app', 'https://example.com:8443/app'],
    ['http://localhost:3000/', 'http://localhost:3000'],
    ['  https://example.com/a  ', 'https://example.com/a'],
    ['https://EXAMPLE.com/Path/With/Case', 'https://example.com/Path/With/Case'],
  ])('%s → %s', (input, expected) => {
    expect(normalizeAppUrl(input)).toBe(expected)
  })

  it('is idempotent', () => {
    const once = normalizeAppUrl('HTTPS://Example.COM/App/?q=1')
    expect(normalizeAppUrl(once)).toBe(once)
  })

  it.each(['', '   ', 'example.com', '/relative/path', 'ftp://example.com', 'javascript:alert(1)', 'mailto:a@b.c', `https://e.com/${'a'.repeat(2100)}`])(
    'rejects %j',
    (input) => {
      expect(() => normalizeAppUrl(input)).toThrow(InvalidAppUrlError)
    },
  )
})
