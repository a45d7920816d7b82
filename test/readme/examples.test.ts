import { describe, expect, it } from 'vitest'
import { examplesOf, isComplete, mismatches } from './examples.js'

/** The reader of README examples: what it takes for a step, and what it calls a match. */

describe('examplesOf', () => {
  it('splits a block into steps with their answers; a block marked `not run` is left out', () => {
    const markdown = [
      '```sh',
      'API=http://127.0.0.1:3000',
      'curl -s -X POST $API/x \\',
      "  -d '{}'",
      '# → {"a":1,',
      '#    "b":"c"}',
      'curl -s $API/y',
      '',
      '# a comment',
      'curl -s $API/z   # trailing words',
      '```',
      '<!-- not run: needs a real chain -->',
      '```sh',
      'RPC_URL=https://example npm start',
      '```',
      '```ts',
      'const x = 1',
      '```',
    ].join('\n')
    const [example, ...others] = examplesOf(markdown, 'README.md')
    expect(others).toEqual([])
    expect(example!.steps).toEqual([
      { command: 'API=http://127.0.0.1:3000', expected: undefined, line: 2 },
      { command: "curl -s -X POST $API/x \\\n  -d '{}'", expected: '{"a":1,"b":"c"}', line: 3 },
      { command: 'curl -s $API/y', expected: undefined, line: 7 },
      { command: 'curl -s $API/z   # trailing words', expected: undefined, line: 10 },
    ])
  })
})

describe('isComplete', () => {
  it('sees a command through continuation lines, quotes spanning lines and command substitutions', () => {
    expect(isComplete('curl -s $API/x')).toBe(true)
    expect(isComplete('curl -s -X POST $API/x \\')).toBe(false)
    expect(isComplete('curl -d "{\\"a\\":1,')).toBe(false)
    expect(isComplete('curl -d "{\\"a\\":1,\n  \\"b\\":2}"')).toBe(true)
    expect(isComplete('TX=$(curl -s "$API/x?d=$(date -u +%F)" | jq -r \'.a[0]\')   # it\'s the newest')).toBe(true)
    expect(isComplete('PROJECT=$(curl -s -X POST $API/p \\\n  -d \'{}\' | jq -r .projectId)')).toBe(true)
    expect(isComplete('PROJECT=$(curl -s -X POST $API/p \\\n  -d \'{}\'')).toBe(false)
  })
})

describe('mismatches', () => {
  const wallet = '{"builderCode":"bc_b9dymewi","walletAddress":"0x976EA74026E726554dB657fA54763abd0C3a0aa9"}'

  it('names a wallet abbreviated as `pre…suf` that is another wallet', () => {
    expect(mismatches('{"builderCode":"bc_b9dymewi","walletAddress":"0x976E…0aa9"}', wallet)).toEqual([])
    expect(mismatches('{"builderCode":"bc_b9dymewi","walletAddress":"0x9965…A4dc"}', wallet)).toEqual(['no "walletAddress":"0x9965…A4dc"'])
  })

  it('takes traffic figures as numbers and the counts a request decides exactly', () => {
    expect(mismatches('{"totals":{"transactions":1},"chainId":31337}', '{"totals":{"transactions":42},"chainId":31337}')).toEqual([])
    expect(mismatches('{"sentCount":1}', '{"sentCount":2}')).toEqual(['no "sentCount":1'])
    expect(mismatches('{"registered":true}', '{"registered": false}')).toEqual(['no "registered":true'])
    expect(mismatches('{"stuck_ranges":[]}', '{"status":"ok"}')).toEqual(['no "stuck_ranges"'])
  })

  it('refuses an error body the example does not show, in pretty-printed JSON too', () => {
    expect(mismatches(undefined, '{"success":false,"error":{"code":"not_found"}}')).toEqual(['answered an error body the example does not show'])
    expect(mismatches('{"projectId":"…"}', '{\n  "success": true,\n  "projectId": "3620"\n}')).toEqual([])
  })
})
