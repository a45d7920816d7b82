import { JSON_BYTES, ScanFailed, word } from './bytes.js'
import { Cursor, parsePart } from './json-cursor.js'
import type { LogFilter, RawLog, RawReceipt } from '../objects.js'

const { CLOSE_BRACE, CLOSE_BRACKET, COLON, OPEN_BRACE, OPEN_BRACKET, QUOTE } = JSON_BYTES

/**
 * A receipt reduced to what the index reads of it, as it is read.
 *
 * A transaction can emit as many logs as its gas pays for: on a chain of
 * cheap gas, one candidate's receipt can hold hundreds of thousands of logs
 * (a hundred megabytes of JSON), and anyone can send a range of them. The
 * index needs a receipt's status and, of a bundle, its EntryPoint's
 * UserOperationEvents for the ops it attributes — nothing else. Kept whole,
 * the receipts of a range grew the worker's heap with every log of every
 * candidate until it died, on every retry of the range. So a receipt keeps
 * the logs its caller's LogFilter names, and no other: none for a plain
 * transaction, a bundle's own events for a bundle. What a receipt holds is
 * then bounded by what the index stores of it.
 */

/** Whether a log (as JSON.parse made it) is one `filter` keeps. */
function isKept(log: unknown, filter: LogFilter): log is RawLog {
  const { address, topics } = (log ?? {}) as Partial<RawLog>
  if (typeof address !== 'string' || !filter.addresses.has(address.toLowerCase()) || !Array.isArray(topics)) return false
  return filter.topics.every((wanted, i) => {
    const topic = topics[i]
    return wanted === undefined || (typeof topic === 'string' && wanted.has(topic.toLowerCase()))
  })
}

const keptLog = (log: RawLog): RawLog => ({ address: log.address, topics: log.topics, data: log.data })

type ReceiptFields = Pick<RawReceipt, 'transactionHash' | 'status' | 'blockHash' | 'blockNumber'>

/** One shape for every reduced receipt, whichever way it was read. */
const reduced = (fields: Partial<ReceiptFields>, logs: RawLog[]): RawReceipt =>
  ({ transactionHash: fields.transactionHash, status: fields.status, blockHash: fields.blockHash, blockNumber: fields.blockNumber, logs }) as RawReceipt

/** A parsed receipt reduced as `readReceipt` reads one: its fields, and only the logs `filter` keeps (none without one). */
export function slimReceipt(receipt: RawReceipt, filter: LogFilter | undefined): RawReceipt {
  const logs = filter && Array.isArray(receipt.logs) ? receipt.logs.filter((log) => isKept(log, filter)).map(keptLog) : []
  return reduced(receipt, logs)
}

const FIELDS = ['transactionHash', 'status', 'blockHash', 'blockNumber'] as const
const FIELD_WORDS = FIELDS.map(word)
const LOGS = word('logs')
const ADDRESS = word('address')

/** The value at the cursor as JSON.parse would give it: a string's bytes directly, anything else parsed. */
function valueAt(cursor: Cursor, what: string): unknown {
  const start = cursor.at
  if (cursor.peek() === QUOTE) {
    const [from, to] = cursor.string()
    return cursor.text(from, to)
  }
  cursor.skipValue()
  return parsePart(cursor, start, cursor.at, what)
}

/**
 * One log, the cursor on its `{`: parsed only when it comes from one of
 * the filter's addresses (compared first), then kept if its topics are
 * wanted too. A log with no string address cannot be judged here.
 */
function readLog(cursor: Cursor, filter: LogFilter): RawLog | undefined {
  cursor.peek()
  const start = cursor.at
  cursor.expect(OPEN_BRACE, 'a log')
  let address: string | undefined
  if (cursor.peek() !== CLOSE_BRACE) {
    do {
      const [keyStart, keyEnd] = cursor.string()
      cursor.expect(COLON, ':')
      if (!cursor.is(keyStart, keyEnd, ADDRESS)) cursor.skipValue()
      else {
        if (address !== undefined || cursor.peek() !== QUOTE) throw new ScanFailed('a log with a repeated or odd address')
        const [from, to] = cursor.string()
        address = cursor.text(from, to)
      }
    } while (cursor.more(CLOSE_BRACE))
  } else cursor.at++
  if (address === undefined) throw new ScanFailed('a log without an address')
  if (!filter.addresses.has(address.toLowerCase())) return undefined
  const log = parsePart(cursor, start, cursor.at, 'a log')
  return isKept(log, filter) ? keptLog(log) : undefined
}

function readLogs(cursor: Cursor, filter: LogFilter | undefined): RawLog[] {
  if (!filter) {
    cursor.skipValue()
    return []
  }
  const logs: RawLog[] = []
  cursor.expect(OPEN_BRACKET, 'a list of logs')
  if (cursor.peek() === CLOSE_BRACKET) {
    cursor.at++
    return logs
  }
  do {
    const log = readLog(cursor, filter)
    if (log) logs.push(log)
  } while (cursor.more(CLOSE_BRACKET))
  return logs
}

/**
 * The receipt object at the cursor (on its `{`), read into its fields and
 * the logs `filter` keeps; the cursor after it. Its other values — the
 * bloom, other logs — are passed over, never decoded. A key it reads given
 * twice is ScanFailed (JSON.parse keeps the last; a reader should not guess).
 */
export function readReceipt(cursor: Cursor, filter: LogFilter | undefined): RawReceipt {
  cursor.expect(OPEN_BRACE, 'a receipt object')
  const fields: Partial<Record<(typeof FIELDS)[number], unknown>> = {}
  let logs: RawLog[] | undefined
  if (cursor.peek() === CLOSE_BRACE) throw new ScanFailed('an empty receipt')
  do {
    const [keyStart, keyEnd] = cursor.string()
    cursor.expect(COLON, ':')
    const field = FIELD_WORDS.findIndex((name) => cursor.is(keyStart, keyEnd, name))
    if (field >= 0) {
      const name = FIELDS[field]!
      if (name in fields) throw new ScanFailed(`a receipt repeats ${name}`)
      fields[name] = valueAt(cursor, name)
    } else if (cursor.is(keyStart, keyEnd, LOGS)) {
      if (logs) throw new ScanFailed('a receipt repeats logs')
      logs = readLogs(cursor, filter)
    } else cursor.skipValue()
  } while (cursor.more(CLOSE_BRACE))
  return reduced(fields as Partial<ReceiptFields>, logs ?? [])
}
