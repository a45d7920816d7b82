import { classifyError, RpcFailure, type RpcErrorObject } from './failure-kinds.js'

/**
 * Reading a node's JSON-RPC answer call by call: pure, no I/O. What came
 * back is sorted into the calls answered and the calls that failed, grouped
 * by kind, so the transport retries just those.
 */

/** What one request's answer gave: results by position, and the failed positions grouped by kind. */
export type Answered<T> = { done: Array<[number, T]>; failed: FailedCalls[] }
export type FailedCalls = { positions: readonly number[]; failure: RpcFailure }

/** One call's result through its check (null when the node has none); throws an error that no retry fixes. */
export type ReadResult<T> = (result: unknown, position: number) => T

type RpcAnswerItem = { id?: unknown; result?: unknown; error?: RpcErrorObject }

/** The request for the calls at `positions`; ids are positions. A single call goes alone, not as a batch of one: nodes without batch support answer it. */
export function requestBody(method: string, params: readonly unknown[][], positions: readonly number[]): string {
  const calls = positions.map((position) => ({ jsonrpc: '2.0', id: position, method, params: params[position] }))
  return JSON.stringify(calls.length === 1 ? calls[0] : calls)
}

/** The whole request failed: every call at `positions` with `failure`. */
export const allFailed = <T>(positions: readonly number[], failure: RpcFailure): Answered<T> => ({ done: [], failed: [{ positions, failure }] })

/** Reads an answer's text call by call: results, and the failed calls grouped by kind. */
export function readItems<T>(read: ReadResult<T>, text: string, positions: readonly number[]): Answered<T> {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return allFailed(positions, new RpcFailure('unreadable', `unreadable answer (${text.length} bytes): ${text.slice(0, 80)}`))
  }
  if (!Array.isArray(parsed) && positions.length > 1) {
    // one object for a batch: the batch as such was refused (Erigon: id null, "batch limit 10 exceeded")
    const error = (parsed as RpcAnswerItem | null)?.error ?? { message: 'a single answer to a batch' }
    return allFailed(positions, failureOf(error, true))
  }
  const items = (Array.isArray(parsed) ? parsed : [parsed]) as Array<RpcAnswerItem | null>
  const byId = new Map(items.map((item) => [Number(item?.id), item]))
  const done: Array<[number, T]> = []
  const failedBy = new Map<string, { positions: number[]; failure: RpcFailure }>()
  for (const position of positions) {
    // a single call answered with an id other than ours (some proxies null it) is still its answer
    const item = byId.get(position) ?? (positions.length === 1 && items.length === 1 ? items[0] : undefined)
    const checked = item && !item.error ? readResult(read, item.result ?? null, position) : undefined
    if (checked && !(checked.value instanceof RpcFailure)) {
      done.push([position, checked.value])
      continue
    }
    const failure = checked?.value instanceof RpcFailure ? checked.value : item?.error ? failureOf(item.error, false) : new RpcFailure('item_error', `no answer for call ${position} in the batch`)
    const group = failedBy.get(failure.kind) ?? { positions: [], failure }
    group.positions.push(position)
    failedBy.set(failure.kind, group)
  }
  return { done, failed: [...failedBy.values()] }
}

/**
 * One call's result through its check. A result that fails it (no block yet
 * from a backend behind the others, another call's answer) is a fault of
 * that call: asked again, counted against its attempts, never the batch's.
 */
export function readResult<T>(read: ReadResult<T>, result: unknown, position: number): { value: T | RpcFailure } {
  try {
    return { value: read(result, position) }
  } catch (error) {
    if (!(error instanceof Error)) return { value: new RpcFailure('item_error', String(error)) }
    const failure = new RpcFailure('item_error', `${error.name}: ${error.message}`)
    failure.checkFailed = error
    return { value: failure }
  }
}

/** A JSON-RPC error object as a failure; `wholeBatch` when it answered a batch as a whole (id null). */
export function failureOf(error: RpcErrorObject, wholeBatch: boolean): RpcFailure {
  const kind = classifyError(error, wholeBatch)
  const failure = new RpcFailure(kind, `${error.message ?? 'error'} (${error.code ?? 'no code'})`)
  if (typeof error.code === 'number') failure.code = error.code
  return failure
}
