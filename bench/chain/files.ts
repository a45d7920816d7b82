import { closeSync, openSync, readFileSync, readSync } from 'node:fs'
import type { ChainMeta } from './generate.js'
import type { ExpectedIndex } from '../../devnet/ledger.js'
import { readChainTruth, readExpectedIndex, type ChainTruth } from './truth.js'

/**
 * Read access to a generated chain. Blocks and receipts stay on disk,
 * pre-serialized, and are read by offset on demand: a million-transaction
 * chain is gigabytes of JSON, which the page cache keeps hot without the
 * replay server holding it on its heap. Only the positions of the receipts
 * an indexer asks for by hash are kept in memory.
 */
export type Chain = {
  dir: string
  meta: ChainMeta
  chainId: number
  /** Highest block number (blocks are 0..lastBlock). */
  lastBlock: number
  hashes: string[]
  numberOf(hash: string): number | undefined
  /** The block as `eth_getBlockByNumber(n, true)` returns it. */
  fullBlock(number: number): Buffer
  /** The block as `eth_getBlockByNumber(n, false)` returns it (transaction hashes only). */
  headerBlock(number: number): Buffer
  /** Every receipt of the block, as `eth_getBlockReceipts(n)` returns them. */
  blockReceipts(number: number): Buffer
  /** The receipt of a transaction an indexer has reason to ask for by hash (a suffix, or a call to an EntryPoint). */
  storedReceipt(hash: string): Buffer | undefined
  /** Those receipts, in chain order. */
  storedReceipts(): IterableIterator<Buffer>
  /** What an index of the chain must total (per code, counts): small, what benches check. */
  truth(): ChainTruth
  /** Every row an index of the chain must hold, and the malformed suffixes: large, read on demand. */
  expectedIndex(): ExpectedIndex
  close(): void
}

function readIndex(path: string): Float64Array {
  const bytes = readFileSync(path)
  return new Float64Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 8)
}

function readAt(fd: number, start: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(length)
  let read = 0
  while (read < length) read += readSync(fd, buffer, read, length - read, start + read)
  return buffer
}

function readRange(fd: number, index: Float64Array, number: number): Buffer {
  const start = index[number]!
  return readAt(fd, start, index[number + 1]! - start)
}

/** `hash \t offset \t length` lines: where each candidate's receipt sits in receipts.json. */
function loadReceiptPositions(path: string): Map<string, { offset: number; length: number }> {
  const positions = new Map<string, { offset: number; length: number }>()
  const text = readFileSync(path, 'latin1')
  let lineStart = 0
  while (lineStart < text.length) {
    const firstTab = text.indexOf('\t', lineStart)
    const secondTab = text.indexOf('\t', firstTab + 1)
    const newline = text.indexOf('\n', secondTab)
    positions.set(text.slice(lineStart, firstTab), {
      offset: Number(text.slice(firstTab + 1, secondTab)),
      length: Number(text.slice(secondTab + 1, newline)),
    })
    lineStart = newline + 1
  }
  return positions
}

export function openChain(dir: string): Chain {
  const meta = JSON.parse(readFileSync(`${dir}/meta.json`, 'utf8')) as ChainMeta
  const hashes = JSON.parse(readFileSync(`${dir}/hashes.json`, 'utf8')) as string[]
  const numbers = new Map(hashes.map((hash, number) => [hash, number]))
  const fullIndex = readIndex(`${dir}/full.idx`)
  const headerIndex = readIndex(`${dir}/header.idx`)
  const receiptIndex = readIndex(`${dir}/receipts.idx`)
  const fullFd = openSync(`${dir}/full.json`, 'r')
  const headerFd = openSync(`${dir}/header.json`, 'r')
  const receiptsFd = openSync(`${dir}/receipts.json`, 'r')
  const positions = loadReceiptPositions(`${dir}/candidates.tsv`)
  let truth: ChainTruth | undefined
  const receiptAt = (position: { offset: number; length: number }) => readAt(receiptsFd, position.offset, position.length)
  return {
    dir,
    meta,
    chainId: meta.params.chainId,
    lastBlock: hashes.length - 1,
    hashes,
    numberOf: (hash) => numbers.get(hash.toLowerCase()),
    fullBlock: (number) => readRange(fullFd, fullIndex, number),
    headerBlock: (number) => readRange(headerFd, headerIndex, number),
    blockReceipts: (number) => readRange(receiptsFd, receiptIndex, number),
    storedReceipt(hash) {
      const position = positions.get(hash.toLowerCase())
      return position && receiptAt(position)
    },
    *storedReceipts() {
      for (const position of positions.values()) yield receiptAt(position)
    },
    truth: () => (truth ??= readChainTruth(dir)),
    expectedIndex: () => readExpectedIndex(dir),
    close() {
      for (const fd of [fullFd, headerFd, receiptsFd]) closeSync(fd)
    },
  }
}
