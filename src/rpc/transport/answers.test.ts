import { describe, expect, it } from 'vitest'
import { failureOf, readItems, readResult, requestBody, type Answered } from './answers.js'
import { RpcFailure } from './failure-kinds.js'

/** A check like the transport's callers': a number result, or null; anything else is another call's answer. */
const asNumber = (result: unknown) => {
  if (result === null) return null
  if (typeof result !== 'number') throw new TypeError(`not a number: ${JSON.stringify(result)}`)
  return result
}

/** An answer as a table row: results by position, failed positions by kind. */
function summary(answered: Answered<unknown>) {
  return {
    done: Object.fromEntries(answered.done),
    failed: Object.fromEntries(answered.failed.map((group) => [group.failure.kind, [...group.positions]])),
  }
}

const item = (id: unknown, result: unknown) => ({ jsonrpc: '2.0', id, result })
const error = (id: unknown, code: number, message: string) => ({ jsonrpc: '2.0', id, error: { code, message } })

describe('readItems: every answer shape, call by call', () => {
  const cases: Array<{ shape: string; positions: number[]; text: string; expected: ReturnType<typeof summary> }> = [
    { shape: 'a whole batch, in order', positions: [0, 1, 2], text: JSON.stringify([item(0, 10), item(1, 11), item(2, 12)]), expected: { done: { 0: 10, 1: 11, 2: 12 }, failed: {} } },
    { shape: 'a batch shuffled (ids intact)', positions: [3, 4], text: JSON.stringify([item(4, 14), item(3, 13)]), expected: { done: { 3: 13, 4: 14 }, failed: {} } },
    { shape: 'a single call alone', positions: [7], text: JSON.stringify(item(7, 17)), expected: { done: { 7: 17 }, failed: {} } },
    { shape: 'a single call whose id a proxy nulled', positions: [7], text: JSON.stringify(item(null, 17)), expected: { done: { 7: 17 }, failed: {} } },
    { shape: 'null results (the node has none)', positions: [0, 1], text: JSON.stringify([item(0, null), item(1, 5)]), expected: { done: { 0: null, 1: 5 }, failed: {} } },
    { shape: 'a partial answer: a call missing', positions: [0, 1, 2], text: JSON.stringify([item(0, 1), item(2, 3)]), expected: { done: { 0: 1, 2: 3 }, failed: { item_error: [1] } } },
    { shape: 'mismatched ids: none of ours', positions: [0, 1], text: JSON.stringify([item(5, 1), item(6, 2)]), expected: { done: {}, failed: { item_error: [0, 1] } } },
    { shape: 'an empty array for a batch', positions: [0, 1], text: '[]', expected: { done: {}, failed: { item_error: [0, 1] } } },
    { shape: 'per-call errors mixed with results', positions: [0, 1, 2], text: JSON.stringify([item(0, 1), error(1, -32005, 'limit exceeded'), error(2, -32003, 'response too large')]), expected: { done: { 0: 1 }, failed: { item_error: [1], response_too_large: [2] } } },
    { shape: 'Besu: every call refused for the batch length', positions: [0, 1], text: JSON.stringify([error(0, -32602, 'Number of requests in batch exceeds limit of 1'), error(1, -32602, 'Number of requests in batch exceeds limit of 1')]), expected: { done: {}, failed: { batch_limit: [0, 1] } } },
    { shape: 'Erigon: one null-id error object for the batch', positions: [0, 1, 2], text: JSON.stringify(error(null, -32000, 'batch limit 2 exceeded: 3 requests given')), expected: { done: {}, failed: { batch_limit: [0, 1, 2] } } },
    { shape: 'a null-id error object naming no batch, for a batch', positions: [0, 1], text: JSON.stringify(error(null, -32603, 'internal error')), expected: { done: {}, failed: { batch_limit: [0, 1] } } },
    { shape: 'a rate-limit error object for a batch', positions: [0, 1], text: JSON.stringify(error(null, 429, 'Too Many Requests')), expected: { done: {}, failed: { rate_limited: [0, 1] } } },
    { shape: 'a single object that is no answer, for a batch', positions: [0, 1], text: '{"jsonrpc":"2.0"}', expected: { done: {}, failed: { batch_limit: [0, 1] } } },
    { shape: 'bad JSON: a body cut short', positions: [0, 1], text: JSON.stringify([item(0, 1), item(1, 2)]).slice(0, 20), expected: { done: {}, failed: { unreadable: [0, 1] } } },
    { shape: 'bad JSON: an HTML page', positions: [0], text: '<html><body>502 Bad Gateway</body></html>', expected: { done: {}, failed: { unreadable: [0] } } },
    { shape: 'JSON null for a batch', positions: [0, 1], text: 'null', expected: { done: {}, failed: { batch_limit: [0, 1] } } },
    { shape: 'null items inside a batch', positions: [0, 1], text: JSON.stringify([null, item(1, 2)]), expected: { done: { 1: 2 }, failed: { item_error: [0] } } },
    { shape: 'a result that fails its check (another call\'s answer)', positions: [0, 1], text: JSON.stringify([item(0, 'block 9'), item(1, 2)]), expected: { done: { 1: 2 }, failed: { item_error: [0] } } },
  ]
  for (const { shape, positions, text, expected } of cases) {
    it(shape, () => {
      expect(summary(readItems(asNumber, text, positions))).toEqual(expected)
    })
  }

  it('keeps what the node said, for the logs and the range row', () => {
    const [group] = readItems(asNumber, JSON.stringify(error(null, -32000, 'batch limit 2 exceeded')), [0, 1, 2]).failed
    expect(group!.failure.message).toBe('batch limit 2 exceeded (-32000)')
    const [unreadable] = readItems(asNumber, '<html>', [0]).failed
    expect(unreadable!.failure.message).toContain('<html>')
  })
})

describe('readResult', () => {
  it('keeps the check\'s own error, so the range job can tell how soon to retry', () => {
    const checkError = new RangeError('block 9 is not known yet')
    const { value } = readResult(() => {
      throw checkError
    }, 1, 0)
    expect(value).toBeInstanceOf(RpcFailure)
    expect((value as RpcFailure).kind).toBe('item_error')
    expect((value as RpcFailure).checkFailed).toBe(checkError)
  })

  it('a thrown non-error is still one call\'s failure', () => {
    const { value } = readResult(() => {
      throw 'odd'
    }, 1, 0)
    expect((value as RpcFailure).message).toBe('odd')
  })
})

describe('failureOf and requestBody', () => {
  it('names code and message', () => {
    expect(failureOf({ message: 'execution reverted' }, false)).toMatchObject({ kind: 'item_error', message: 'execution reverted (no code)' })
  })

  it('sends a single call alone and a batch as an array, ids being positions', () => {
    expect(JSON.parse(requestBody('eth_x', [['a'], ['b']], [1]))).toEqual({ jsonrpc: '2.0', id: 1, method: 'eth_x', params: ['b'] })
    expect(JSON.parse(requestBody('eth_x', [['a'], ['b']], [0, 1])).map((call: { id: number }) => call.id)).toEqual([0, 1])
  })
})
