import { closeSync, openSync, readFileSync, readSync } from 'node:fs'
import type { ChainMeta, GroundTruth } from './generate.js'

/**
 * Read access to a generated chain. Blocks stay on disk, pre-serialized, and
 * are read by offset on demand: a million-transaction chain is gigabytes of
 * JSON, which the page cache keeps hot without the replay server holding it
 * on its heap. Receipts (only those of transactions the indexer fetches) are
 * small enough to keep in memory.
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
  /** Stored receipt JSON of a transaction the indexer has reason to fetch. */
  storedReceipt(hash: string): Buffer | undefined
  storedReceipts(): IterableIterator<Buffer>
  truth(): GroundTruth
  close(): void
}

function readIndex(path: string): Float64Array {
  const bytes = readFileSync(path)
  return new Float64Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 8)
}

function readRange(fd: number, index: Float64Array, number: number): Buffer {
  const start = index[number]!
  const length = index[number + 1]! - start
  const buffer = Buffer.allocUnsafe(length)
  let read = 0
  while (read < length) read += readSync(fd, buffer, read, length - read, start + read)
  return buffer
}

function loadReceipts(path: string): Map<string, Buffer> {
  const receipts = new Map<string, Buffer>()
  const text = readFileSync(path)
  let lineStart = 0
  while (lineStart < text.length) {
    const tab = text.indexOf(9, lineStart)
    const newline = text.indexOf(10, tab)
    receipts.set(text.toString('latin1', lineStart, tab), text.subarray(tab + 1, newline))
    lineStart = newline + 1
  }
  return receipts
}

export function openChain(dir: string): Chain {
  const meta = JSON.parse(readFileSync(`${dir}/meta.json`, 'utf8')) as ChainMeta
  const hashes = JSON.parse(readFileSync(`${dir}/hashes.json`, 'utf8')) as string[]
  const numbers = new Map(hashes.map((hash, number) => [hash, number]))
  const fullIndex = readIndex(`${dir}/full.idx`)
  const headerIndex = readIndex(`${dir}/header.idx`)
  const fullFd = openSync(`${dir}/full.json`, 'r')
  const headerFd = openSync(`${dir}/header.json`, 'r')
  const receipts = loadReceipts(`${dir}/receipts.tsv`)
  let truth: GroundTruth | undefined
  return {
    dir,
    meta,
    chainId: meta.params.chainId,
    lastBlock: hashes.length - 1,
    hashes,
    numberOf: (hash) => numbers.get(hash.toLowerCase()),
    fullBlock: (number) => readRange(fullFd, fullIndex, number),
    headerBlock: (number) => readRange(headerFd, headerIndex, number),
    storedReceipt: (hash) => receipts.get(hash.toLowerCase()),
    storedReceipts: () => receipts.values(),
    truth: () => (truth ??= JSON.parse(readFileSync(`${dir}/truth.json`, 'utf8')) as GroundTruth),
    close() {
      closeSync(fullFd)
      closeSync(headerFd)
    },
  }
}
