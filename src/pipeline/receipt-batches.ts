import type { ReceiptWanted } from '../rpc/batches.js'
import type { RawReceipt } from '../rpc/objects.js'

export type ReceiptBatcherOptions = {
  /** The node's receipts for a list of wanted transactions, in order (rpc.receipts). */
  fetch: (wanted: readonly ReceiptWanted[]) => Promise<RawReceipt[]>
  /** Receipt lists asked of the node at once; ranges ready meanwhile wait and share the next. */
  inFlight: number
  /** Most ranges' lists asked together. */
  maxRanges: number
}

type Waiting = { wanted: readonly ReceiptWanted[]; resolve: (receipts: RawReceipt[]) => void; reject: (error: Error) => void }

/**
 * Receipts stage of one worker process, per chain: the receipts of ranges
 * ready while others' are being fetched go to the node together.
 *
 * A range of the everyday chain wants ~200 receipts of ~2 KB: one request,
 * a round trip for 0.4 MB, beside its one or two requests of 18 MB of
 * blocks. On a node that answers late or caps the requests in flight (a
 * hosted provider), every request is a round trip out of the few it allows,
 * and the receipts were a third of the requests (BENCHMARKS.md, "Receipts of
 * several ranges in one request"). Asked together, four ranges' receipts
 * take one request; the transport still cuts the list by bytes, so a dense
 * chain's block receipts come in batches its budget allows.
 *
 * A range waits only while `inFlight` lists are already out, so a range at
 * the head of a chain (alone) asks at once. A shared list that fails is
 * asked again range by range, so one range's trouble (a reorg between its
 * blocks and its receipts, a receipt the node cannot serve) is its own.
 */
export function createReceiptBatcher(options: ReceiptBatcherOptions) {
  const waiting: Waiting[] = []
  let out = 0

  const askAlone = (entry: Waiting) => options.fetch(entry.wanted).then(entry.resolve, entry.reject)

  async function askTogether(batch: Waiting[]) {
    out++
    try {
      if (batch.length === 1) return await askAlone(batch[0]!)
      const receipts = await options.fetch(batch.flatMap((entry) => entry.wanted)).catch((error: Error) => error)
      if (receipts instanceof Error) {
        await Promise.all(batch.map(askAlone))
        return
      }
      let at = 0
      for (const entry of batch) {
        entry.resolve(receipts.slice(at, at + entry.wanted.length))
        at += entry.wanted.length
      }
    } finally {
      out--
      askWaiting()
    }
  }

  function askWaiting() {
    while (waiting.length > 0 && out < options.inFlight) void askTogether(waiting.splice(0, options.maxRanges))
  }

  /** The receipts of one range's wanted transactions, in order, asked alone or with other ranges'. */
  return function receipts(wanted: readonly ReceiptWanted[]): Promise<RawReceipt[]> {
    if (wanted.length === 0) return Promise.resolve([])
    return new Promise((resolve, reject) => {
      waiting.push({ wanted, resolve, reject })
      askWaiting()
    })
  }
}
