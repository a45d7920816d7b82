import { describe, expect, it } from 'vitest'
import { blocksKept, pruneBelow } from './prune.js'

describe('the prune bound', () => {
  it('keeps four confirmation windows of blocks, at least 256', () => {
    expect(blocksKept(0)).toBe(256)
    expect(blocksKept(64)).toBe(256)
    expect(blocksKept(65)).toBe(260)
    expect(blocksKept(100)).toBe(400)
  })

  it('prunes below the checkpoint minus what is kept; nothing before anything is indexed', () => {
    expect(pruneBelow(1_000, 10)).toBe(744)
    expect(pruneBelow(1_000, 100)).toBe(600)
    expect(pruneBelow(100, 0)).toBe(-156)
    expect(pruneBelow(undefined, 10)).toBeUndefined()
  })
})
