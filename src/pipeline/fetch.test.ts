import type { Hex } from 'viem'
import { describe, expect, it } from 'vitest'
import { piecesOf } from './fetch.js'

const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hex
const job = { chainId: 1, fromBlock: 10, toBlock: 14, parentHash: hash(9), toHash: hash(14) }
const blocks = [10, 11, 12, 13, 14].map((number) => ({ number, hash: hash(number) }))
const rows = (counts: number[]) => new Map(counts.map((count, i) => [10 + i, count]))
const bounds = (pieces: ReturnType<typeof piecesOf>) => pieces.map((piece) => [piece.fromBlock, piece.toBlock])

describe('piecesOf', () => {
  it('cuts contiguous pieces of at most maxRows, each pinned to the hashes fetched', () => {
    const pieces = piecesOf(job, blocks, rows([100, 100, 100, 150, 100]), 200)
    expect(bounds(pieces)).toEqual([[10, 11], [12, 12], [13, 13], [14, 14]])
    expect(pieces.map((piece) => [piece.parentHash, piece.toHash])).toEqual([
      [hash(9), hash(11)],
      [hash(11), hash(12)],
      [hash(12), hash(13)],
      [hash(13), hash(14)],
    ])
    expect(pieces.every((piece) => piece.chainId === 1)).toBe(true)
  })

  it("ends the last piece on the job's own hash, however the node spelled it (a split must cover the range exactly)", () => {
    const shouted = blocks.map((block) => ({ ...block, hash: `0x${block.hash.slice(2).toUpperCase()}` as Hex }))
    const pieces = piecesOf(job, shouted, rows([300, 300, 300, 300, 300]), 200)
    expect(pieces.at(-1)!.toHash).toBe(job.toHash)
    expect(pieces[0]!.parentHash).toBe(job.parentHash)
  })

  it('gives a block past maxRows a piece of its own, and blocks without rows join their neighbours', () => {
    expect(bounds(piecesOf(job, blocks, rows([0, 500, 0, 0, 30]), 200))).toEqual([[10, 10], [11, 11], [12, 14]])
    expect(bounds(piecesOf(job, blocks, rows([300, 300, 300, 300, 300]), 200))).toEqual([[10, 10], [11, 11], [12, 12], [13, 13], [14, 14]])
  })
})
