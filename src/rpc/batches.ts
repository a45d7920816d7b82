import { numberToHex } from 'viem'
import { checkedBlockReceipts, checkedReceipt, keptOf, logFiltersOf, receiptExpected, scannedFrom, type ReceiptWanted } from './answer-checks.js'
import { createAskGroups } from './ask-groups.js'
import type { Endpoint, EndpointPool } from './endpoints/endpoint-pool.js'
import { createReceiptKnowledge, saysMethodMissing, type ReceiptKnowledge } from './endpoints/endpoint-receipts.js'
import type { RawReceipt, RawTransaction } from './objects.js'
import { MismatchedAnswerError } from './errors.js'
import { slimReceipt } from './scan/receipt-read.js'
import { scanBlockBatch, type ScannedBlock, type TransactionFilter } from './scan/block-scan.js'
import { scanBlockReceiptsBatch, scanReceiptsBatch, type BlockReceiptsExpected } from './scan/receipts-scan.js'

/**
 * The indexer's bulk calls — full blocks and receipts — over the chain's
 * endpoint pool, each work on one endpoint's transport. Blocks are read by
 * the scanner in block-scan.ts rather than parsed: parsing every
 * transaction is the cost this path exists to avoid. An answer the scanner
 * gives up on (an error item, a missing block, an unusual layout) is parsed
 * and read call by call, so the transport can retry just the calls that
 * failed. Receipts come per transaction or per block, whichever the
 * endpoint's measured answer sizes say is cheaper (endpoint-receipts.ts);
 * a block's receipts are scanned and only the wanted ones read
 * (receipts-scan.ts) unless most of them are wanted anyway. Every receipt
 * given back holds only the logs its caller asked for (receipt-read.ts).
 * What a parsed answer must be is checked in answer-checks.ts.
 */
export { RpcItemError, type ReceiptWanted } from './answer-checks.js'

/** Raised by a reader that only measures an answer: the transport then reads it call by call. */
class MeasuredOnly extends Error {}

const supported = (known: ReceiptKnowledge) => known.support === 'supported'

/**
 * Above this share of an answer's receipts wanted, the answer is parsed
 * whole rather than scanned. Measured on the dense bench chain's 143 MB of
 * block receipts (BENCHMARKS.md): JSON.parse of all 0.47–0.59 CPU s;
 * scanning 0.24 s plus parsing what is kept, so 0.35 s with a tenth wanted,
 * 0.43 s with a third, 0.49 s with half, 0.70 s with the chain's own
 * candidates (52 % of the receipts, 67 % of the bytes).
 */
const SCAN_WHEN_WANTED_AT_MOST = 0.4

/**
 * …and only up to this size: JSON.parse of an answer builds every receipt
 * and log of it at once, several times its bytes in heap, and its text is
 * a string of its own beside the buffer. A block whose transactions emit
 * logs by the hundred thousand answers a hundred megabytes and more;
 * scanned, it costs the heap only what is kept. Past a megabyte or so the
 * parsed answer outlives the young generation's collections, and its text
 * (an external string) lives until the next full one: on the dense bench,
 * whose receipts answers run to several megabytes, the texts of whole
 * parses held ~50 MB beside the answer buffers at the peak (issue 40.5,
 * bench/LOG.md). A small answer is still parsed whole where that is cheaper.
 */
const PARSE_WHOLE_AT_MOST_BYTES = 2 ** 20

function wantedShare(asked: readonly BlockReceiptsExpected[]): number {
  let wanted = 0
  let transactions = 0
  for (const block of asked) {
    wanted += block.hashes.size
    transactions += block.txCount
  }
  return transactions === 0 ? 0 : wanted / transactions
}

/** What the probe reads of an answer at most: whether it is a result or an error shows in its first bytes, and a block's receipts may be a hundred megabytes. */
const PROBE_READS_BYTES = 64 * 1024

/** The first PROBE_READS_BYTES of an answer, as text; the rest is not read. */
async function answerStart(response: Response): Promise<string> {
  if (!response.body) return ''
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let length = 0
  while (length < PROBE_READS_BYTES) {
    const read = await reader.read()
    if (read.done) break
    chunks.push(read.value)
    length += read.value.byteLength
  }
  await reader.cancel()
  return Buffer.concat(chunks).toString('utf8', 0, Math.min(length, PROBE_READS_BYTES))
}

export function createBatches(pool: EndpointPool, options: { timeoutMs: number }) {
  const knowledge = new WeakMap<Endpoint, ReceiptKnowledge>()
  const probes = new Map<Endpoint, Promise<void>>()
  const knowledgeOf = (endpoint: Endpoint) => {
    let known = knowledge.get(endpoint)
    if (!known) knowledge.set(endpoint, (known = createReceiptKnowledge()))
    return known
  }

  /**
   * Blocks `from`..`to`, with the transactions `filter` lets through, each
   * reduced by `detect` as soon as it is read (block-scan.ts says why; dropped where it returns undefined),
   * then, once the answer was read whole, by `keep` (given the block's number; dropped where it returns
   * undefined). `detect` has no effect beyond its answer (an answer the scan gives up on half-way is read
   * again call by call); `keep`, which runs once per transaction kept, may count what it keeps.
   * Throws BlockNotFoundError if no endpoint has one.
   */
  function blocks<Detected, Candidate = Detected>(
    from: number,
    to: number,
    filter: TransactionFilter,
    detect: (tx: RawTransaction) => Detected | undefined,
    keep: (detected: Detected, blockNumber: number) => Candidate | undefined = (detected) => detected as unknown as Candidate,
  ): Promise<ScannedBlock<Candidate>[]> {
    const numbers = Array.from({ length: to - from + 1 }, (_, i) => from + i)
    const reduced = (block: ScannedBlock<Detected>): ScannedBlock<Candidate> => {
      const candidates: Candidate[] = []
      for (const detected of block.candidates) {
        const kept = keep(detected, block.number)
        if (kept !== undefined) candidates.push(kept)
      }
      return { ...block, candidates }
    }
    /** A block parsed whole (the call-by-call reading): its transactions detected as the scan's are. */
    const detectedIn = (block: ScannedBlock): ScannedBlock<Detected> => ({
      ...block,
      candidates: block.candidates.map(detect).filter((detected): detected is Detected => detected !== undefined),
    })
    return pool.run(numbers.length, (endpoint) =>
      endpoint.transport.callMany({
        method: 'eth_getBlockByNumber',
        sizeKey: 'eth_getBlockByNumber(full)',
        paced: true,
        params: numbers.map((number) => [numberToHex(number), true]),
        readBatch: (body, positions) => {
          endpoint.meter.bytes(body.length)
          return scanBlockBatch(body, positions.map((position) => numbers[position]!), filter, detect).map(reduced)
        },
        readResult: (value, position) => reduced(detectedIn(scannedFrom(value, numbers[position]!, filter))),
      }),
    )
  }

  /**
   * Whether the endpoint serves eth_getBlockReceipts, asked once with a plain
   * request (not through the transport: a node without the method would
   * have each of its retries spent on finding that out). Unknown stays
   * unknown when the question itself failed; it is asked again next time.
   */
  function probeBlockReceipts(endpoint: Endpoint, blockNumber: number): Promise<void> {
    // ranges fetched at once share one question
    let probe = probes.get(endpoint)
    if (!probe) {
      probe = askBlockReceipts(endpoint, blockNumber).finally(() => probes.delete(endpoint))
      probes.set(endpoint, probe)
    }
    return probe
  }

  async function askBlockReceipts(endpoint: Endpoint, blockNumber: number): Promise<void> {
    const known = knowledgeOf(endpoint)
    try {
      const response = await fetch(endpoint.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockReceipts', params: [numberToHex(blockNumber)] }),
        signal: AbortSignal.timeout(options.timeoutMs),
      })
      const text = await answerStart(response)
      if (saysMethodMissing(text.slice(0, 500)) && (!response.ok || text.includes('"error"'))) known.support = 'unsupported'
      else if (response.ok && text.includes('"result"')) known.support = 'supported'
    } catch {
      // unreachable now: single receipts this time, the question asked again later
    }
  }

  /** The receipts of whole blocks, for the wanted transactions at `positions`. */
  async function blockReceiptsInto(endpoint: Endpoint, wanted: readonly ReceiptWanted[], groups: number[][], results: RawReceipt[]) {
    const blocksAsked = groups.map((positions) => wanted[positions[0]!]!.block)
    // per block: what its answer must be, and which receipts the scanner keeps (the others are never parsed)
    const expected: BlockReceiptsExpected[] = groups.map((positions, g) => ({
      blockHash: blocksAsked[g]!.hash,
      txCount: blocksAsked[g]!.txCount,
      hashes: new Set(positions.map((position) => wanted[position]!.hash.toLowerCase())),
      logs: logFiltersOf(positions.map((position) => wanted[position]!)),
    }))
    const known = knowledgeOf(endpoint)
    const byBlock = await endpoint.transport.callMany({
      method: 'eth_getBlockReceipts',
      params: blocksAsked.map((block) => [numberToHex(block.number)]),
      readBatch: (body, positions) => {
        endpoint.meter.bytes(body.length)
        known.blockReceipts(body.length, positions.length, positions.reduce((sum, position) => sum + blocksAsked[position]!.txCount, 0))
        const asked = positions.map((position) => expected[position]!)
        // JSON.parse of a whole answer is cheaper than scanning it and parsing most of it (BENCHMARKS.md, receipts scanner)
        if (wantedShare(asked) > SCAN_WHEN_WANTED_AT_MOST && body.length <= PARSE_WHOLE_AT_MOST_BYTES) throw new MeasuredOnly()
        // ScanFailed: the transport parses the answer and checkedBlockReceipts says what is wrong with it
        return scanBlockReceiptsBatch(body, positions, asked)
      },
      // parsed whole, a block's receipts are reduced to the wanted ones as soon as they are read: the range's are held till the end
      readResult: (value, position) => keptOf(checkedBlockReceipts(value, blocksAsked[position]!), expected[position]!),
    })
    groups.forEach((positions, g) => {
      for (const position of positions) {
        const receipt = byBlock[g]!.get(wanted[position]!.hash.toLowerCase())
        if (!receipt) throw new MismatchedAnswerError(`the receipts of block ${blocksAsked[g]!.number} lack transaction ${wanted[position]!.hash}`)
        results[position] = receipt
      }
    })
  }

  /**
   * Per endpoint, the single receipts of concurrent ranges asked together
   * (ask-groups.ts), on a node that caps the requests in flight: one
   * request of a thousand receipts costs such a node one slot, as one of
   * two hundred does.
   */
  const receiptGroups = new WeakMap<Endpoint, ReturnType<typeof createAskGroups<ReceiptWanted, RawReceipt>>>()
  const groupsOf = (endpoint: Endpoint) => {
    let groups = receiptGroups.get(endpoint)
    if (!groups) {
      const ask = (items: readonly ReceiptWanted[]) => askSingleReceipts(endpoint, items)
      receiptGroups.set(endpoint, (groups = createAskGroups({ ask, alone: ask })))
    }
    return groups
  }

  async function askSingleReceipts(endpoint: Endpoint, wanted: readonly ReceiptWanted[]): Promise<RawReceipt[]> {
    const results = new Array<RawReceipt>(wanted.length)
    await singleReceiptsOf(endpoint, wanted, [...wanted.keys()], results)
    return results
  }

  /** One receipt per wanted transaction at `positions`: with other ranges' where the node caps requests in flight. */
  async function singleReceiptsInto(endpoint: Endpoint, wanted: readonly ReceiptWanted[], positions: number[], results: RawReceipt[]) {
    if (positions.length === 0) return
    if (!endpoint.transport.requestsCapped) return singleReceiptsOf(endpoint, wanted, positions, results)
    const receipts = await groupsOf(endpoint).ask(positions.map((position) => wanted[position]!))
    receipts.forEach((receipt, k) => (results[positions[k]!] = receipt))
  }

  /** One receipt per wanted transaction at `positions`, in requests of this caller's own. */
  async function singleReceiptsOf(endpoint: Endpoint, wanted: readonly ReceiptWanted[], positions: number[], results: RawReceipt[]) {
    const known = knowledgeOf(endpoint)
    const receipts = await endpoint.transport.callMany({
      method: 'eth_getTransactionReceipt',
      params: positions.map((position) => [wanted[position]!.hash]),
      readBatch: (body, asked) => {
        endpoint.meter.bytes(body.length)
        known.singleReceipts(body.length, asked.length)
        // ScanFailed: the transport parses the answer and checkedReceipt says what is wrong with it
        return scanReceiptsBatch(body, asked, asked.map((k) => receiptExpected(wanted[positions[k]!]!)))
      },
      readResult: (value, k) => slimReceipt(checkedReceipt(value, wanted[positions[k]!]!), wanted[positions[k]!]!.logs),
    })
    receipts.forEach((receipt, k) => (results[positions[k]!] = receipt))
  }

  async function receiptsFrom(endpoint: Endpoint, wanted: readonly ReceiptWanted[]): Promise<RawReceipt[]> {
    const known = knowledgeOf(endpoint)
    const byBlock = new Map<string, number[]>()
    for (const [position, { block }] of wanted.entries()) {
      const key = block.hash.toLowerCase()
      const group = byBlock.get(key)
      if (group) group.push(position)
      else byBlock.set(key, [position])
    }
    let whole = [...byBlock.values()].filter((positions) => known.wholeBlockCheaper(positions.length, wanted[positions[0]!]!.block.txCount))
    if (whole.length > 0 && known.support === 'unknown') {
      await probeBlockReceipts(endpoint, wanted[whole[0]![0]!]!.block.number)
      if (!supported(known)) whole = []
    }
    const inWhole = new Set(whole.flat())
    const single = wanted.flatMap((_, position) => (inWhole.has(position) ? [] : [position]))
    const results = new Array<RawReceipt>(wanted.length)
    await Promise.all([whole.length ? wholeOrSingle(endpoint, wanted, whole, results) : undefined, singleReceiptsInto(endpoint, wanted, single, results)])
    return results
  }

  /** Whole blocks' receipts; a node that turns out not to have the method (a pool behind one URL) gets single receipts from now on. */
  async function wholeOrSingle(endpoint: Endpoint, wanted: readonly ReceiptWanted[], groups: number[][], results: RawReceipt[]) {
    try {
      await blockReceiptsInto(endpoint, wanted, groups, results)
    } catch (error) {
      if (!(error instanceof Error) || !saysMethodMissing(error.message)) throw error
      knowledgeOf(endpoint).support = 'unsupported'
      await singleReceiptsInto(endpoint, wanted, groups.flat(), results)
    }
  }

  /**
   * Receipts of the wanted transactions, in order, each from the block it
   * was fetched in; throws ReceiptNotFoundError if no endpoint has one, and
   * ReceiptsOfAnotherBlockError when the chain moved between block and receipts.
   */
  function receipts(wanted: readonly ReceiptWanted[]): Promise<RawReceipt[]> {
    if (wanted.length === 0) return Promise.resolve([])
    return pool.run(wanted.length, (endpoint) => receiptsFrom(endpoint, wanted))
  }

  return { blocks, receipts, receiptKnowledge: (endpoint: Endpoint) => knowledgeOf(endpoint).read() }
}
