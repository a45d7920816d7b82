import { describe, expect, it } from 'vitest'
import { RpcFailure, type FailureKind } from '../rpc/transport/failure-kinds.js'
import { isJsonRpcRefusal, toRpcFailure, worthAnotherEndpoint } from './errors.js'

/** A failure as the transport throws it, with the HTTP status or JSON-RPC code the node gave. */
function failure(kind: FailureKind, said: { httpStatus?: number; code?: number } = {}) {
  const error = new RpcFailure(kind, `eth_getTransactionByHash: no (after 1 attempts)`)
  if (said.httpStatus !== undefined) error.httpStatus = said.httpStatus
  if (said.code !== undefined) error.code = said.code
  return error
}

describe('worthAnotherEndpoint: which failures a validation lookup asks the chain’s next endpoint about', () => {
  const cases: Array<[string, unknown, boolean]> = [
    ['no answer at all (refused, reset)', failure('network'), true],
    ['a hung endpoint (no answer within RPC_TIMEOUT_MS)', failure('timeout'), true],
    ['HTTP 503', failure('http_error', { httpStatus: 503 }), true],
    ['HTTP 500', failure('http_error', { httpStatus: 500 }), true],
    ['HTTP 429', failure('rate_limited', { httpStatus: 429 }), true],
    ['an error page for an answer', failure('unreadable'), true],
    ['a rate limit as a JSON-RPC error in a 200 (code 429)', failure('rate_limited', { code: 429 }), true],
    ['QuickNode’s rate limit (-32007)', failure('item_error', { code: -32007 }), true],
    ['HTTP 400', failure('http_error', { httpStatus: 400 }), false],
    ['HTTP 401 (this client refused)', failure('http_error', { httpStatus: 401 }), false],
    ['a refused log range (-32005)', failure('item_error', { code: -32005 }), false],
    ['an internal error of the call (-32603 in a 200)', failure('item_error', { code: -32603 }), false],
    ['an answer over RPC_MAX_ANSWER_BYTES', failure('response_too_large'), false],
    ['an error not from the transport', new Error('bug'), false],
  ]
  for (const [name, error, expected] of cases) {
    it(`${expected ? 'moves on' : 'stops'} on ${name}`, () => expect(worthAnotherEndpoint(error)).toBe(expected))
  }
})

describe('what a lookup makes of a failed call', () => {
  it('reads a JSON-RPC error of the call as a refusal, and nothing else', () => {
    expect(isJsonRpcRefusal(failure('item_error', { code: -32005 }))).toBe(true)
    expect(isJsonRpcRefusal(failure('http_error', { httpStatus: 503 }))).toBe(false)
    expect(isJsonRpcRefusal(failure('timeout'))).toBe(false)
  })

  it('answers a timeout as one (504) and any other failure as the node’s (502), an RPC URL in its message redacted', () => {
    expect(toRpcFailure(failure('timeout'), 8453).name).toBe('RpcTimeoutError')
    const outage = toRpcFailure(new Error('connect ECONNREFUSED for https://base.example/v2/oKxs8xQ3bZ1yN7kP0aLmT4qq'), 8453)
    expect(outage.name).toBe('RpcUnavailableError')
    expect(outage.message).toBe('RPC of chain 8453 failed: connect ECONNREFUSED for https://base.example/v2/***')
  })
})
