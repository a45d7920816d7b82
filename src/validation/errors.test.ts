import { HttpRequestError, InternalRpcError, LimitExceededRpcError, RpcRequestError, TimeoutError } from 'viem'
import { describe, expect, it } from 'vitest'
import { worthAnotherEndpoint } from './errors.js'

const url = 'http://node.example'
const body = { method: 'eth_getTransactionByHash' }
const rpcError = (code: number, status?: number) => new RpcRequestError({ body, error: { code, message: 'no' }, url, ...(status ? { status } : {}) })

describe('worthAnotherEndpoint: which failures a validation lookup asks the chain’s next endpoint about', () => {
  const cases: Array<[string, unknown, boolean]> = [
    ['no answer at all (refused, reset)', new HttpRequestError({ url, body, cause: new Error('fetch failed') }), true],
    ['HTTP 503', new HttpRequestError({ url, body, status: 503 }), true],
    ['HTTP 500', new HttpRequestError({ url, body, status: 500 }), true],
    ['HTTP 429', new HttpRequestError({ url, body, status: 429 }), true],
    ['a JSON-RPC error in a 502 answer', rpcError(-32000, 502), true],
    ['a rate limit as a JSON-RPC error in a 200 (code 429)', rpcError(429), true],
    ['QuickNode’s rate limit (-32007)', rpcError(-32007), true],
    ['HTTP 400', new HttpRequestError({ url, body, status: 400 }), false],
    ['HTTP 401 (this client refused)', new HttpRequestError({ url, body, status: 401 }), false],
    ['a refused log range (-32005)', new LimitExceededRpcError(rpcError(-32005)), false],
    ['an internal error of the call (-32603 in a 200)', new InternalRpcError(rpcError(-32603)), false],
    ['a timeout (the next endpoint would get a whole RPC_TIMEOUT_MS more)', new TimeoutError({ body, url }), false],
    ['an error not from viem', new Error('bug'), false],
  ]
  for (const [name, error, expected] of cases) {
    it(`${expected ? 'moves on' : 'stops'} on ${name}`, () => expect(worthAnotherEndpoint(error)).toBe(expected))
  }
})
